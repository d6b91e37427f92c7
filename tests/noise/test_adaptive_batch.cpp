// Adaptive batch size (McCandlish et al. 2018, arXiv:1812.06162, App. D;
// trainer/adaptive_batch.hpp): the rule by hand, and on synthetic linear regression, where B_simple
// is known in closed form from the parameters (runs.hpp), the batch the trainer chooses follows
// clip(B_simple) within one realisable step plus the hysteresis.
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>

#include "runs.hpp"
#include "trainer/adaptive_batch.hpp"
#include "trainer/comm/local_communicator.hpp"

namespace {

using lbt::trainer::adaptive_accum;
using lbt::trainer::AdaptiveBatchOptions;

const AdaptiveBatchOptions kRule{
    .enabled = true, .batch_min = 16, .batch_max = 512, .step_examples = 8, .hysteresis = 0.1};

}  // namespace

BOOST_AUTO_TEST_CASE(adaptive_rule_rounds_clips_and_waits_for_a_resolved_estimate) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  BOOST_TEST(adaptive_accum(kRule, 100.0, /*resolved=*/false, 2) == 2);  // not yet resolved
  BOOST_TEST(adaptive_accum(kRule, nan, true, 2) == 2);
  BOOST_TEST(adaptive_accum(kRule, -5.0, true, 3) == 3);
  BOOST_TEST(adaptive_accum(kRule, 39.4, true, 2) == 5);     // 39.4 / 8 = 4.9 -> 40
  BOOST_TEST(adaptive_accum(kRule, 1000.0, true, 2) == 64);  // clipped to batch_max = 512
  BOOST_TEST(adaptive_accum(kRule, 3.0, true, 10) == 2);     // clipped to batch_min = 16
  // hysteresis at B = 80: the rule's batch is kept within 10% (8) plus half a step (4) of it
  BOOST_TEST(adaptive_accum(kRule, 92.0, true, 10) == 10);
  BOOST_TEST(adaptive_accum(kRule, 92.5, true, 10) == 12);  // 92.5 / 8 = 11.6 -> 96
  BOOST_TEST(adaptive_accum(kRule, 67.5, true, 10) == 8);   // 67.5 / 8 = 8.4 -> 64
  BOOST_TEST(adaptive_accum(kRule, 68.0, true, 10) == 10);
}

// A B_simple hovering about the midpoint between two realisable batches a grid step apart
// (128 and 192 on a grid of 64, 10% hysteresis) keeps the batch: the rounded batch was compared
// before, and 158 -> 192, 162 -> 128 -> 192 ... moved it at every report.
BOOST_AUTO_TEST_CASE(a_b_simple_between_two_batches_does_not_flip_between_them) {
  const AdaptiveBatchOptions coarse{
      .enabled = true, .batch_min = 64, .batch_max = 1024, .step_examples = 64, .hysteresis = 0.1};
  std::int64_t accum = 2;  // 128
  for (const double b : {162.0, 158.0, 165.0, 155.0, 170.0}) {
    accum = adaptive_accum(coarse, b, true, accum);
    BOOST_TEST(accum == 2, "B_simple " << b);
  }
  BOOST_TEST(adaptive_accum(coarse, 173.0, true, 2) == 3);  // past 128 + 12.8 + 32
  BOOST_TEST(adaptive_accum(coarse, 150.0, true, 3) == 3);  // 192 keeps down to 140.8
  BOOST_TEST(adaptive_accum(coarse, 140.0, true, 3) == 2);
}

namespace {

std::string adaptive_toml() {
  return "[model]\nspec = \"linear:32-1\"\ninit = \"zero\"\n"
         "[data]\ndataset = \"synthetic-regression\"\nvalidation_size = 0\n"
         "synthetic.examples = 65536\nsynthetic.dim = 32\nsynthetic.noise = 2.0\n"
         "[train]\nbatch_schedule = \"adaptive\"\nbatch_min = 16\nbatch_max = 512\n"
         "micro_batch = 8\nsteps = 400\neval_every = 100000\nlog_every = 1\nthreads = 1\n"
         "seed = 0\n"
         "[optimizer]\nname = \"sgd\"\nlr = 0.01\nmomentum = 0.0\n"
         "[noise]\nenabled = true\nevery = 1\nwindow_steps = 20\nestimator = \"both\"\n"
         "ema = 0.8\n";
}

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& file) {
  std::vector<nlohmann::json> out;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

double clip(double b) {
  return std::clamp(b, 16.0, 512.0);
}

}  // namespace

// metrics.jsonl line k (step k + 1) holds the batch of 0-based step k; noise.jsonl's
// per_example line of step k holds the EMA B_simple that chooses step k + 1's batch.
BOOST_AUTO_TEST_CASE(adaptive_batch_follows_b_simple_on_synthetic_regression) {
  const auto dir = lbt::test::noise_run_dir("adaptive_rule");
  std::filesystem::remove_all(dir);
  lbt::comm::LocalCommunicator comm;
  const auto params = lbt::test::train_config(adaptive_toml(), comm, dir);
  const auto metrics = read_jsonl(dir / "metrics.jsonl");
  const auto noise = lbt::test::read_noise(dir);
  const auto &per_example = noise.at("per_example"), &two_batch = noise.at("two_batch");
  BOOST_TEST_REQUIRE(metrics.size() >= 50u);
  BOOST_TEST(metrics.front()["global_batch"] == 16);  // batch_min until resolved
  std::int64_t examples = 0, changes = 0;
  for (std::size_t k = 0; k + 1 < metrics.size(); ++k) {
    const double now = metrics[k]["global_batch"], next = metrics[k + 1]["global_batch"];
    examples += static_cast<std::int64_t>(now);
    changes += next != now;
    // the rule's estimate: per_example's where resolved (non-null), else two_batch's
    const auto& ema = per_example[k]["b_simple_ema"].is_null() ? two_batch[k] : per_example[k];
    const auto& b = ema["b_simple_ema"];
    BOOST_TEST_CONTEXT("step " << k << ": batch " << now << " -> " << next << ", B_simple " << b) {
      BOOST_TEST(ema["step"] == static_cast<std::int64_t>(k));
      if (b.is_null() || ema["b_simple_ema_ci95"][1].is_null()) {
        BOOST_TEST(next == now);  // unresolved: no change
      } else {
        // within half a realisable step of clip(B_simple), or kept by the hysteresis
        BOOST_TEST(std::abs(next - clip(b)) <= 4.0 + 0.1 * now + 1e-9);
      }
    }
  }
  BOOST_TEST(changes >= 3);
  // The budget is in examples: 400 steps x batch_min.
  examples += static_cast<std::int64_t>(metrics.back()["global_batch"]);
  BOOST_TEST(examples >= 400 * 16);
  BOOST_TEST(metrics.back()["examples"] == examples);
  // The closed form at the final parameters (runs.hpp): the estimate the rule followed, and so
  // the batch, track it (the EMA lags and the estimate is noisy: 30%).
  lbt::Config config = lbt::Config::from_string(adaptive_toml());
  config.validate(lbt::trainer::run_schema());
  const auto run = lbt::trainer::resolve_run_config(config, 1);
  const auto splits = lbt::data::load_splits(run.train.data, run.train.seed);
  const double exact = lbt::test::dataset_b_simple_at(splits.train, params[0], params[1][0]);
  const double chosen = metrics.back()["global_batch"];
  BOOST_TEST_MESSAGE("final batch " << chosen << ", closed-form B_simple " << exact);
  BOOST_TEST(std::abs(chosen - clip(exact)) <= 0.3 * clip(exact) + 8.0);
}
