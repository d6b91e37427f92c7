// The final accuracy's Wilson interval, the final loss's spread and interval (last cases), and the
// metrics made from sums as the GPU's ranks make them (loop_evaluation.cpp): each rank's contiguous
// share of the validation split, summed over the ranks, gives the host's evaluation of the whole
// split, at any number of ranks: the shares tile the split (every example counted once), and at one
// rank, whose chunks are the host's, the metrics are the same numbers. At more, the shares cut the
// forward passes into other batch sizes, whose GEMMs round the logits in another order: the mean
// loss agrees to float32 round-off (measured 1.9e-11 relative) and the accuracy to an argmax flip.
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

namespace {

// n examples of `dim` standard normal features, each with a uniformly drawn class label.
data::Dataset random_split(std::int64_t n, std::int64_t dim, int classes, unsigned seed) {
  data::Dataset split;
  split.n = n;
  split.dim = dim;
  split.num_classes = classes;
  std::mt19937 gen(seed);
  std::normal_distribution<float> z;
  for (std::int64_t i = 0; i < n * dim; ++i) split.x.push_back(z(gen));
  for (std::int64_t i = 0; i < n; ++i) split.labels.push_back(static_cast<int>(gen() % classes));
  return split;
}

// The model's outputs on every example of `split`, in batches of 64, as evaluate computes them.
std::vector<double> predictions(nn::Model& model, const data::Dataset& split) {
  std::vector<double> out;
  for (std::int64_t start = 0; start < split.n; start += 64) {
    const std::int64_t b = std::min<std::int64_t>(64, split.n - start);
    const float* y = model.forward(split.row(start), b, false);
    out.insert(out.end(), y, y + b * model.output_dim());
  }
  return out;
}

}  // namespace

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
  const data::Dataset split = random_split(1003, 8, 3, 5);
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
    const Interval95 ci = accuracy_interval(accuracy, n);
    BOOST_TEST(ci.low < accuracy);
    BOOST_TEST(accuracy < ci.high);
    for (const double p0 : {ci.low, ci.high}) {
      const double lhs = (accuracy - p0) * (accuracy - p0), rhs = z2 * p0 * (1 - p0) / n;
      BOOST_TEST(lhs == rhs, boost::test_tools::tolerance(1e-9));
    }
  }
  const Interval95 all = accuracy_interval(1.0, 10), none = accuracy_interval(0.0, 10);
  BOOST_TEST(all.low == 10 / (10 + z2), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(all.high == 1.0, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(none.low >= 0.0);
  BOOST_TEST(none.low < 1e-15);
  BOOST_TEST(none.high == z2 / (10 + z2), boost::test_tools::tolerance(1e-12));
  BOOST_TEST(std::isnan(accuracy_interval(0.5, 0).low));
  BOOST_TEST(std::isnan(accuracy_interval(NAN, 100).high));
}

// The final loss's resolution: Evaluation::loss_sd (and mse_sd for regression) is the sample
// standard deviation of each example's loss, here recomputed from the logits in double by the
// textbook formulas (log-sum-exp minus the label's logit; the squared errors), at an eval batch
// that splits the split into uneven chunks.
BOOST_AUTO_TEST_CASE(the_spread_of_the_per_example_losses_is_measured) {
  const data::Dataset split = random_split(503, 6, 4, 11);
  auto model = nn::Model::from_spec("mlp:6-16-4", nn::InitScheme::kHe, {6});
  Rng rng = make_rng(2, RngStream::kInit);
  model->build(rng);
  comm::LocalCommunicator one;
  const Evaluation e = evaluate(*model, split, one, 100);
  std::vector<double> losses;
  for (std::int64_t start = 0; start < split.n; start += 100) {  // the logits evaluate rounds
    const std::int64_t b = std::min<std::int64_t>(100, split.n - start);
    const float* logits = model->forward(split.row(start), b, false);
    for (std::int64_t i = 0; i < b; ++i) {
      double sum = 0.0;
      for (int c = 0; c < 4; ++c) sum += std::exp(static_cast<double>(logits[i * 4 + c]));
      losses.push_back(std::log(sum) - logits[i * 4 + split.labels[start + i]]);
    }
  }
  const auto sd_of = [](const std::vector<double>& v) {
    double mean = 0.0, ss = 0.0;
    for (const double x : v) mean += x / static_cast<double>(v.size());
    for (const double x : v) ss += (x - mean) * (x - mean);
    return std::sqrt(ss / static_cast<double>(v.size() - 1));
  };
  // To float32 round-off: lbt subtracts the largest logit in float before exp (measured 1.5e-9).
  BOOST_TEST(e.loss_sd == sd_of(losses), boost::test_tools::tolerance(1e-6));
  BOOST_TEST(std::isnan(e.mse_sd));

  // Regression with two outputs: each example's loss is 1/2 its squared error, its mse the
  // squared error over the outputs.
  std::mt19937 gen(12);
  std::normal_distribution<float> z;
  data::Dataset reg;
  reg.n = 301;
  reg.dim = 6;
  reg.target_dim = 2;
  for (std::int64_t i = 0; i < reg.n * reg.dim; ++i) reg.x.push_back(z(gen));
  for (std::int64_t i = 0; i < reg.n * 2; ++i) reg.targets.push_back(z(gen));
  auto linear = nn::Model::from_spec("linear:6-2", nn::InitScheme::kHe, {6});
  linear->build(rng);
  const Evaluation r = evaluate(*linear, reg, one, 64);
  const std::vector<double> pred = predictions(*linear, reg);
  std::vector<double> half_sse, mse;
  for (std::int64_t i = 0; i < reg.n; ++i) {
    const double a = pred[2 * i] - static_cast<double>(reg.targets[2 * i]),
                 b = pred[2 * i + 1] - static_cast<double>(reg.targets[2 * i + 1]);
    half_sse.push_back(0.5 * (a * a + b * b));
    mse.push_back((a * a + b * b) / 2.0);
  }
  BOOST_TEST(r.regression);
  BOOST_TEST(r.loss_sd == sd_of(half_sse), boost::test_tools::tolerance(1e-9));
  BOOST_TEST(r.mse_sd == sd_of(mse), boost::test_tools::tolerance(1e-9));
}

// mean_interval covers the mean of a skewed non-negative quantity (exponential losses, mean 1)
// about 95% of the time over 4000 seeded repetitions of n = 400 examples (the normal
// approximation undercovers a skewed mean slightly: a few tenths of a percent here), and never
// reaches below 0.
BOOST_AUTO_TEST_CASE(the_loss_interval_covers_the_mean_and_stays_non_negative) {
  std::mt19937_64 gen(2026);
  std::exponential_distribution<double> loss(1.0);
  int covered = 0;
  const int repetitions = 4000;
  const std::int64_t n = 400;
  for (int rep = 0; rep < repetitions; ++rep) {
    double sum = 0.0, squares = 0.0;
    for (std::int64_t i = 0; i < n; ++i) {
      const double l = loss(gen);
      sum += l;
      squares += l * l;
    }
    const double mean = sum / n;
    const Interval95 ci = mean_interval(mean, sample_sd(sum, squares, n), n);
    covered += ci.low <= 1.0 && 1.0 <= ci.high;
  }
  const double coverage = static_cast<double>(covered) / repetitions;
  BOOST_TEST(coverage > 0.935, coverage);
  BOOST_TEST(coverage < 0.962, coverage);
  BOOST_TEST(mean_interval(0.01, 1.0, 4).low == 0.0);
  BOOST_TEST(std::isnan(mean_interval(1.0, 0.5, 1).low));
  BOOST_TEST(std::isnan(sample_sd(1.0, 1.0, 1.0)));
  BOOST_TEST(std::isnan(mean_interval(NAN, 0.5, 100).high));
}

// R^2 of an output that does not vary over the split is undefined, and so is the average over
// outputs: NaN (null in eval.jsonl), not sklearn's force_finite 0 that read "0.0000 [0.0000,
// 0.0000]" (2026-11-29 audit); the mse is measured as ever.
BOOST_AUTO_TEST_CASE(r2_of_a_constant_target_is_undefined) {
  data::Dataset reg;
  reg.n = 50;
  reg.dim = 2;
  reg.target_dim = 2;
  for (std::int64_t i = 0; i < reg.n; ++i) {
    reg.x.insert(reg.x.end(), {static_cast<float>(i), 1.0f});
    reg.targets.insert(reg.targets.end(), {static_cast<float>(i % 7), 2.5f});  // 2nd constant
  }
  auto linear = nn::Model::from_spec("linear:2-2", nn::InitScheme::kHe, {2});
  Rng rng = make_rng(4, RngStream::kInit);
  linear->build(rng);
  comm::LocalCommunicator one;
  const Evaluation e = evaluate(*linear, reg, one, 16);
  BOOST_TEST(std::isnan(e.r2));
  BOOST_TEST(std::isnan(e.r2_sd));
  BOOST_TEST(std::isfinite(e.mse));
}

// R^2's standard error by the delta method (Evaluation::r2_sd / sqrt(n)) against the jackknife's,
// computed here in double from the model's own predictions: leave each example out, recompute
// every output's SSE and SST about the remaining examples' mean, and take (n - 1)/n times the
// sum of squared deviations of the n values. Two outputs, a random model: R^2 is negative here,
// which the interval allows (only its upper end is held, at 1).
BOOST_AUTO_TEST_CASE(r2s_standard_error_agrees_with_the_jackknife) {
  std::mt19937 gen(31);
  std::normal_distribution<float> z;
  data::Dataset reg;
  reg.n = 401;
  reg.dim = 6;
  reg.target_dim = 2;
  for (std::int64_t i = 0; i < reg.n * reg.dim; ++i) reg.x.push_back(z(gen));
  for (std::int64_t i = 0; i < reg.n; ++i) {  // targets that the features explain in part
    reg.targets.push_back(reg.x[i * 6] + 0.5f * z(gen));
    reg.targets.push_back(reg.x[i * 6 + 1] - reg.x[i * 6 + 2] + z(gen));
  }
  auto linear = nn::Model::from_spec("linear:6-2", nn::InitScheme::kHe, {6});
  Rng rng = make_rng(4, RngStream::kInit);
  linear->build(rng);
  comm::LocalCommunicator one;
  const Evaluation e = evaluate(*linear, reg, one, 64);
  const std::vector<double> pred = predictions(*linear, reg);
  const auto r2_without = [&](std::int64_t left_out) {
    double r2 = 0.0;
    for (int j = 0; j < 2; ++j) {
      double mean = 0.0, sse = 0.0, sst = 0.0, m = 0.0;
      for (std::int64_t i = 0; i < reg.n; ++i)
        if (i != left_out) mean += reg.targets[2 * i + j], m += 1.0;
      mean /= m;
      for (std::int64_t i = 0; i < reg.n; ++i) {
        if (i == left_out) continue;
        const double y = reg.targets[2 * i + j];
        sse += (pred[2 * i + j] - y) * (pred[2 * i + j] - y);
        sst += (y - mean) * (y - mean);
      }
      r2 += 0.5 * (1.0 - sse / sst);
    }
    return r2;
  };
  BOOST_TEST(e.r2 == r2_without(-1), boost::test_tools::tolerance(1e-9));
  std::vector<double> loo;
  for (std::int64_t i = 0; i < reg.n; ++i) loo.push_back(r2_without(i));
  double mean = 0.0, ss = 0.0;
  for (const double v : loo) mean += v / static_cast<double>(reg.n);
  for (const double v : loo) ss += (v - mean) * (v - mean);
  const double jackknife_se = std::sqrt(ss * static_cast<double>(reg.n - 1) / reg.n);
  const double delta_se = e.r2_sd / std::sqrt(static_cast<double>(reg.n));
  BOOST_TEST(delta_se == jackknife_se, boost::test_tools::tolerance(0.05));
}

// r2_interval covers the population's R^2 about 95% of the time: y = 2x + e with x, e standard
// normal, the model's prediction 1.5x, so R^2 = 1 - E[(0.5x + e)^2] / Var(y) = 1 - 1.25/5 = 0.75;
// 4000 seeded validation splits of 500 examples (measured 0.9475).
BOOST_AUTO_TEST_CASE(the_r2_interval_covers_the_populations_r2) {
  auto linear = nn::Model::from_spec("linear:1-1", nn::InitScheme::kHe, {1});
  Rng rng = make_rng(1, RngStream::kInit);
  linear->build(rng);
  auto& store = linear->store();
  BOOST_REQUIRE(store.segments().size() == 2u);  // weight, bias
  *store.param_ptr(0) = 1.5f;
  *store.param_ptr(1) = 0.0f;
  const float probe[2] = {1.0f, 0.0f};
  const float* y = linear->forward(probe, 2, false);
  BOOST_REQUIRE((y[0] == 1.5f && y[1] == 0.0f));
  comm::LocalCommunicator one;
  std::mt19937 gen(2026);
  std::normal_distribution<float> z;
  int covered = 0;
  const int repetitions = 4000;
  for (int rep = 0; rep < repetitions; ++rep) {
    data::Dataset split;
    split.n = 500, split.dim = 1, split.target_dim = 1;
    for (std::int64_t i = 0; i < split.n; ++i) {
      const float x = z(gen);
      split.x.push_back(x);
      split.targets.push_back(2.0f * x + z(gen));
    }
    const Evaluation e = evaluate(*linear, split, one, 256);
    const Interval95 ci = r2_interval(e.r2, e.r2_sd, e.count);
    covered += ci.low <= 0.75 && 0.75 <= ci.high;
  }
  const double coverage = static_cast<double>(covered) / repetitions;
  BOOST_TEST_MESSAGE("R^2 interval coverage " << coverage);
  BOOST_TEST(coverage > 0.935, coverage);
  BOOST_TEST(coverage < 0.962, coverage);
  BOOST_TEST(r2_interval(0.999, 0.5, 100).high == 1.0);
  BOOST_TEST(r2_interval(-0.5, 1.0, 100).low < -0.5);
  BOOST_TEST(std::isnan(r2_interval(0.5, 0.1, 1).low));
}

BOOST_AUTO_TEST_SUITE_END()
