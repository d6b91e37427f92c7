// Branching from a checkpoint (train.branch_from, experiments/branch_start.hpp) through the
// real `lbt train`: the k = 1 branch with the reference's own data order is the reference's own
// continuation bit for bit, and a k = 2 branch takes the reference's LR at the same data
// position, rescaled by the run's scaling rule.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>

#include "cbs_support.hpp"

namespace fs = std::filesystem;
using lbt::test::CbsReference;
using lbt::test::metrics_by_step;
using lbt::test::run_lbt;
using lbt::test::scratch;

namespace {

// A warmup and a cosine decay over the reference's own 60 steps: an LR that is not the
// reference's at the same step would show in the losses and in metrics.jsonl's lr.
CbsReference decaying() {
  CbsReference r;
  r.schedule = "warmup = 10\ndecay = \"cosine\"\n";
  return r;
}

const fs::path& reference() {
  static const fs::path dir = [] {
    CbsReference r = decaying();
    auto d = lbt::test::train_reference("ref_branch", r);
    return d;
  }();
  return dir;
}

lbt::test::CliResult branch(const std::string& name, int batch, int accum, int steps,
                            const std::string& extra = "") {
  const fs::path ckpt = reference() / "checkpoints" / "step_0000000020.ckpt";
  return run_lbt("train --config " + (reference() / "config.toml").string() + " --out " +
                 (scratch() / name).string() + " --quiet --set train.branch_from='\"" +
                 ckpt.string() + "\"' --set train.global_batch=" + std::to_string(batch) +
                 " --set train.accum_steps=" + std::to_string(accum) + " --set train.steps=" +
                 std::to_string(steps) + " --set noise.enabled=false" + extra);
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_k1_branch_with_the_reference_order_is_its_own_continuation_bit_for_bit) {
  const auto r = branch("k1", 32, 4, 60);
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const auto ref = metrics_by_step(reference());
  const auto br = metrics_by_step(scratch() / "k1");
  BOOST_TEST_REQUIRE(br.size() == 40u);  // steps 21..60
  BOOST_TEST(br.begin()->first == 21);
  for (const auto& [step, line] : br) {
    BOOST_TEST_CONTEXT("step " << step) {
      BOOST_TEST_REQUIRE(ref.count(step) == 1u);
      // Bit for bit: the same doubles, not close ones.
      BOOST_TEST(line["loss"].get<double>() == ref.at(step)["loss"].get<double>());
      BOOST_TEST(line["lr"].get<double>() == ref.at(step)["lr"].get<double>());
    }
  }
  const auto ref_summary = nlohmann::json::parse(lbt::test::slurp(reference() / "summary.json"));
  const auto br_summary =
      nlohmann::json::parse(lbt::test::slurp(scratch() / "k1" / "summary.json"));
  BOOST_TEST(br_summary["final_val_loss"].get<double>() ==
             ref_summary["final_val_loss"].get<double>());
  BOOST_TEST(br_summary["examples"].get<std::int64_t>() == 60 * 32);
}

BOOST_AUTO_TEST_CASE(another_order_seed_changes_the_continuation) {
  const auto r = branch("k1_seed", 32, 4, 60, " --set train.order_seed=4");
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const auto ref = metrics_by_step(reference());
  const auto br = metrics_by_step(scratch() / "k1_seed");
  BOOST_TEST(br.at(21)["loss"].get<double>() != ref.at(21)["loss"].get<double>());
}

BOOST_AUTO_TEST_CASE(a_k2_branch_takes_the_reference_lr_at_the_same_examples_times_the_rule) {
  // 40 steps at 2 x 32 cover the 40 x 32 examples of 20 reference steps... and 20 more.
  const auto r = branch("k2", 64, 8, 40);
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const auto ref = metrics_by_step(reference());
  const auto br = metrics_by_step(scratch() / "k2");
  BOOST_TEST_REQUIRE(br.size() == 20u);  // steps 21..40 of the branch
  // Branch step 20 + j (line 21 + j) is at reference step 20 + 2 j (line 21 + 2 j), where the
  // reference ran: j < 20. Linear scaling: twice the reference's LR.
  for (int j = 0; j < 20; ++j) {
    BOOST_TEST_CONTEXT("branch line " << 21 + j) {
      const double want = 2.0 * ref.at(21 + 2 * j)["lr"].get<double>();
      const double got = br.at(21 + j)["lr"].get<double>();
      BOOST_TEST(std::abs(got - want) <= 1e-12 * std::abs(want));
      // The epoch counts the data seen: that of reference step 22 + 2 j, up to the epoch's
      // last partial batch, which each batch leaves out in its own way (not 21 + j of the
      // branch's bigger steps).
      const double epoch = br.at(21 + j)["epoch"].get<double>();
      const double ref_epoch = ref.at(22 + 2 * j)["epoch"].get<double>();
      BOOST_TEST(std::abs(epoch - ref_epoch) <= 0.02 * ref_epoch, epoch << " vs " << ref_epoch);
    }
  }
}

BOOST_AUTO_TEST_CASE(a_batch_that_is_not_a_multiple_of_the_reference_is_refused) {
  const auto r = branch("k15", 48, 6, 40);
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("not a whole multiple") != std::string::npos, r.err);
}
