// The final accuracy's Wilson interval (last case), and the metrics made from sums as the
// GPU's ranks make them (loop_evaluation.cpp): each rank's contiguous share of the validation
// split, summed over the ranks, gives the host's evaluation of the whole split, at any number of
// ranks: the shares tile the split (every example counted once), and at one rank, whose chunks are
// the host's, the metrics are the same numbers. At more, the shares cut the forward passes into
// other batch sizes, whose GEMMs round the logits in another order: the mean loss agrees to float32
// round-off (measured 1.9e-11 relative) and the accuracy to an argmax flip.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

#include "core/rng.hpp"
#include "nn/model.hpp"
#include "trainer/comm/local_communicator.hpp"
#include "trainer/evaluation.hpp"
#include "trainer/loop.hpp"

using namespace lbt;
using namespace lbt::trainer;

BOOST_AUTO_TEST_SUITE(evaluation_shares)

BOOST_AUTO_TEST_CASE(contiguous_shares_tile_the_split_in_rank_order) {
  for (const std::int64_t n : {0, 1, 5, 10007}) {
    for (int ranks = 1; ranks <= 7; ++ranks) {
      std::int64_t next = 0;
      for (int r = 0; r < ranks; ++r) {
        const ExampleRange share = contiguous_share(n, r, ranks);
        BOOST_TEST(share.begin == next, "n " << n << " rank " << r << " of " << ranks);
        BOOST_TEST(share.end - share.begin >= n / ranks);
        BOOST_TEST(share.end - share.begin <= n / ranks + 1);
        next = share.end;
      }
      BOOST_TEST(next == n, "n " << n << " over " << ranks);
    }
  }
}

BOOST_AUTO_TEST_CASE(the_shares_sums_give_the_whole_splits_metrics) {
  data::Dataset split;
  split.n = 1003;
  split.dim = 8;
  split.num_classes = 3;
  std::mt19937 gen(5);
  std::normal_distribution<float> z;
  for (std::int64_t i = 0; i < split.n * split.dim; ++i) split.x.push_back(z(gen));
  for (std::int64_t i = 0; i < split.n; ++i) split.labels.push_back(static_cast<int>(gen() % 3));
  auto model = nn::Model::from_spec("mlp:8-16-3", nn::InitScheme::kHe, {8});
  Rng rng = make_rng(1, RngStream::kInit);
  model->build(rng);
  comm::LocalCommunicator one;
  const Evaluation whole = evaluate(*model, split, one, 100);
  BOOST_TEST(whole.accuracy > 0.0);

  const std::int64_t chunk = 100;
  std::vector<float> x(static_cast<std::size_t>(chunk * split.dim));
  std::vector<std::int32_t> labels(chunk);
  for (const int ranks : {1, 2, 3, 7}) {
    ClassificationSums total;
    for (int r = 0; r < ranks; ++r) {
      const ExampleRange share = contiguous_share(split.n, r, ranks);
      for (std::int64_t start = share.begin; start < share.end; start += chunk) {
        const std::int64_t b = std::min(chunk, share.end - start);
        for (std::int64_t j = 0; j < b; ++j)
          split.copy_example(start + j, j, x.data(), labels.data(), nullptr);
        const float* out = model->forward(x.data(), b, false);
        std::int64_t correct = 0;
        total.loss +=
            batch_loss(*model, out, split, labels.data(), nullptr, b, 0.0f, false, &correct);
        total.correct += static_cast<double>(correct);
        total.count += static_cast<double>(b);
      }
    }
    const Evaluation e = classification_evaluation(total);
    BOOST_TEST(e.count == whole.count, ranks << " ranks");
    BOOST_TEST(!e.regression);
    if (ranks == 1) {
      BOOST_TEST(e.accuracy == whole.accuracy);
      BOOST_TEST(e.loss == whole.loss);
      continue;
    }
    BOOST_TEST(std::abs(e.accuracy - whole.accuracy) <= 1.0 / split.n + 1e-15, ranks << " ranks");
    BOOST_TEST(e.loss == whole.loss, boost::test_tools::tolerance(1e-6));
  }
  const Evaluation empty = classification_evaluation({});
  BOOST_TEST(empty.count == 0);
  BOOST_TEST(empty.accuracy == 0.0);
}

// The final accuracy's 95% Wilson interval: its ends are the p0 whose score test just accepts
// the measured accuracy, (acc - p0)^2 = z^2 p0 (1 - p0) / n (the interval's definition, checked
// here instead of its closed form), it holds the accuracy, and at the edges it has the known
// forms: n of n right gives [n / (n + z^2), 1], none right [0, z^2 / (n + z^2)].
BOOST_AUTO_TEST_CASE(the_final_accuracys_interval_is_wilsons) {
  const double z = 1.959963984540054, z2 = z * z;
  for (const auto& [accuracy, n] : std::vector<std::pair<double, std::int64_t>>{
           {0.9, 100}, {0.9054, 10000}, {0.5, 7}, {0.13, 1000}}) {
    const AccuracyInterval ci = accuracy_interval(accuracy, n);
    BOOST_TEST(ci.low < accuracy);
    BOOST_TEST(accuracy < ci.high);
    for (const double p0 : {ci.low, ci.high}) {
      const double lhs = (accuracy - p0) * (accuracy - p0), rhs = z2 * p0 * (1 - p0) / n;
      BOOST_TEST(lhs == rhs, boost::test_tools::tolerance(1e-9));
    }
  }
  const AccuracyInterval all = accuracy_interval(1.0, 10), none = accuracy_interval(0.0, 10);
  BOOST_TEST(all.low == 10 / (10 + z2), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(all.high == 1.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(none.low >= 0.0);
  BOOST_TEST(none.low < 1e-15);
  BOOST_TEST(none.high == z2 / (10 + z2), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(std::isnan(accuracy_interval(0.5, 0).low));
  BOOST_TEST(std::isnan(accuracy_interval(NAN, 100).high));
}

BOOST_AUTO_TEST_SUITE_END()
