// A planned batch warmup through `lbt train` (train.batch_schedule = "steps";
// trainer/batch_steps.hpp). On the synthetic regression with plain SGD and a constant LR under
// the linear rule: every step's batch and LR are the ones worked out by hand below from the
// stages; one stage is the fixed-batch run bit for bit; a run resumed from the checkpoint right
// after a change ends where the uninterrupted run ends; steps-to-target is refined as with a
// fixed batch (the same crossing as evaluating after every step); bad stages are one error line
// and exit 2.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "support/cli_runner.hpp"
#include "support/run_lines.hpp"

namespace fs = std::filesystem;
using lbt::test::final_params;
using lbt::test::lines_without_timing;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

namespace {

// Micro-batch 8 on one rank: every batch is 8 x k. LR 0.01 at batch 32, linear rule.
const std::string kBase =
    std::string("train --config ") + LBT_SOURCE_DIR +
    "/experiments/configs/synthetic_regression.toml --quiet --set noise.enabled=false"
    " --set train.micro_batch=8 --set train.log_every=1 --set train.threads=1"
    " --set optimizer.lr=0.01 --set schedule.scaling=linear --set schedule.reference_batch=32"
    " --set train.eval_every=10";
const std::string kStepped =
    kBase +
    " --set train.batch_schedule=steps"
    " --set train.batch_steps='0:32, 320:64, 1000:128' --set train.steps=60";

}  // namespace

// Worked by hand: steps 1-10 take 32 (320 examples after step 10); the stage at 320 starts with
// step 11: steps 11-21 take 64 (320 + 11 x 64 = 1024 >= 1000 after step 21); from step 22, 128.
// The budget is 60 x 32 = 1920 examples: 1024 + 7 x 128 = 1920 after step 28, the last. The LR
// is 0.01 x B / 32.
BOOST_AUTO_TEST_CASE(every_step_takes_the_stage_s_batch_and_the_rule_s_lr) {
  const fs::path run = scratch() / "stepped";
  const auto r = run_lbt(kStepped + " --out " + run.string());
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const auto metrics = lines_without_timing(run / "metrics.jsonl");
  BOOST_TEST_REQUIRE(metrics.size() == 28u);
  std::int64_t examples = 0;
  for (const auto& m : metrics) {
    const std::int64_t step = m["step"];
    const std::int64_t batch = step <= 10 ? 32 : step <= 21 ? 64 : 128;
    examples += batch;
    BOOST_TEST_CONTEXT("step " << step) {
      BOOST_TEST(m["global_batch"].get<std::int64_t>() == batch);
      BOOST_TEST(m["examples"].get<std::int64_t>() == examples);
      BOOST_TEST(m["lr"].get<double>() == 0.01 * static_cast<double>(batch) / 32.0,
                 boost::test_tools::tolerance(1e-12));
      BOOST_TEST(m.contains("next_global_batch") == (step == 10 || step == 21));
    }
  }
  const auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_TEST(summary["examples"].get<std::int64_t>() == 1920);
  BOOST_TEST(summary["steps"].get<std::int64_t>() == 28);
  BOOST_TEST(summary["batch_schedule"] == "steps");
  BOOST_TEST(summary["batch_steps"] == "0:32, 320:64, 1000:128");
  BOOST_TEST(summary["global_batch"] == 32);        // the first stage's
  BOOST_TEST(summary["global_batch_last"] == 128);  // the last step's
}

// With one stage the schedule is a fixed batch: the same data, the same steps, the same bits.
BOOST_AUTO_TEST_CASE(one_stage_is_the_fixed_batch_run_bit_for_bit) {
  const fs::path stepped = scratch() / "one_stage", fixed = scratch() / "fixed";
  const auto a = run_lbt(kBase + " --set train.batch_schedule=steps --set train.batch_steps=0:64" +
                         " --set train.steps=30 --out " + stepped.string());
  const auto b =
      run_lbt(kBase + " --set train.global_batch=64 --set train.steps=30 --out " + fixed.string());
  BOOST_TEST_REQUIRE(a.code == 0, a.err);
  BOOST_TEST_REQUIRE(b.code == 0, b.err);
  const auto ms = lines_without_timing(stepped / "metrics.jsonl"),
             mf = lines_without_timing(fixed / "metrics.jsonl");
  BOOST_TEST_REQUIRE(ms.size() == mf.size());
  for (std::size_t i = 0; i < ms.size(); ++i) {
    BOOST_TEST(ms[i]["loss"].get<double>() == mf[i]["loss"].get<double>(), "step " << i + 1);
    BOOST_TEST(ms[i]["lr"].get<double>() == mf[i]["lr"].get<double>(), "step " << i + 1);
  }
  BOOST_TEST(final_params(stepped) == final_params(fixed));
}

BOOST_AUTO_TEST_CASE(resume_right_after_a_change_is_bit_exact) {
  const fs::path whole = scratch() / "whole", resumed = scratch() / "resumed";
  const auto a = run_lbt(kStepped + " --out " + whole.string() +
                         " --set train.checkpoint_every=1 --set train.checkpoint_keep=100000"
                         " --set train.checkpoint_every_seconds=0");
  BOOST_TEST_REQUIRE(a.code == 0, a.err);
  // Checkpoint 10 holds the next stage's accumulation, not yet used (the change after step 10).
  fs::copy(whole, resumed, fs::copy_options::recursive);
  for (const auto& entry : fs::directory_iterator(resumed / "checkpoints")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) == 0 && std::stoll(name.substr(5)) > 10) fs::remove(entry.path());
  }
  const auto b = run_lbt("train --resume " + resumed.string() + " --quiet");
  BOOST_TEST_REQUIRE(b.code == 0, b.err);
  BOOST_TEST(final_params(resumed) == final_params(whole));
  BOOST_TEST(lines_without_timing(resumed / "metrics.jsonl") ==
             lines_without_timing(whole / "metrics.jsonl"));
}

// The crossing of val_loss <= 9.0 (near step 24) read on a grid of 10 steps and refined to one
// step is the step that evaluating after every step finds; examples_to_target is the sum of the
// batches by hand.
BOOST_AUTO_TEST_CASE(steps_to_target_is_refined_as_with_a_fixed_batch) {
  const std::string target =
      " --set train.target='val_loss<=9.0' --set train.stop_at_target=true"
      " --set train.target_definition=first_passage"
      " --set train.target_resolution=0";
  const fs::path coarse = scratch() / "coarse", every = scratch() / "every";
  const auto a = run_lbt(kStepped + target + " --out " + coarse.string());
  const auto b = run_lbt(kStepped + target + " --set train.eval_every=1 --out " + every.string());
  BOOST_TEST_REQUIRE(a.code == 0, a.err);
  BOOST_TEST_REQUIRE(b.code == 0, b.err);
  const auto sa = nlohmann::json::parse(slurp(coarse / "summary.json"));
  const auto sb = nlohmann::json::parse(slurp(every / "summary.json"));
  BOOST_TEST_REQUIRE(sb["steps_to_target"].is_number(), sb.dump());
  const std::int64_t s = sb["steps_to_target"];
  BOOST_TEST_MESSAGE("steps to target " << s);
  BOOST_TEST(s % 10 != 0);  // between the coarse grid's evaluations: a refinement was needed
  BOOST_TEST(sa["steps_to_target"].get<std::int64_t>() == s);
  const std::int64_t by_hand = s <= 10   ? 32 * s
                               : s <= 21 ? 320 + 64 * (s - 10)
                                         : 1024 + 128 * (s - 21);
  BOOST_TEST(sa["examples_to_target"].get<std::int64_t>() == by_hand);
  BOOST_TEST(sb["examples_to_target"].get<std::int64_t>() == by_hand);
}

BOOST_AUTO_TEST_CASE(stages_that_cannot_run_are_one_error_line_and_exit_2) {
  const std::string base = kBase + " --set train.batch_schedule=steps --set train.steps=20";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" --set train.batch_steps='16:32, 320:64'", "first stage to start at 0"},
      {" --set train.batch_steps='0:32, 0:64'", "increasing order"},
      {" --set train.batch_steps='0:32, 320:60'", "a multiple of ranks x micro_batch"},
      {" --set train.batch_steps='0:32, 320:sixty'", "whole numbers"},
      {" --set train.batch_steps='0:0'", "a batch > 0"},
      {" --set train.batch_steps=''", "at least one stage"},
      {" --set train.batch_steps=0:32 --set train.accum_steps=2", "train.accum_steps"},
      {" --set train.batch_steps=0:32 --set train.sync_every=4", "train.batch_schedule"},
      // 61440 training examples: a stage past them drew each several times in one step.
      {" --set train.batch_steps='0:32, 1000:131072'", "fewer than train.batch_steps's batch"},
      {" --set train.batch_steps=0:32 --set train.batch_max=64", "train.batch_max"},  // adaptive's
  };
  for (const auto& [set, says] : cases) {
    const auto r = run_lbt(base + set + " --out " + (scratch() / "refused").string());
    BOOST_TEST_CONTEXT(set << ": " << r.err) {
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.err.rfind("error: ", 0) == 0);
      BOOST_TEST(r.err.substr(0, r.err.find('\n')).find(says) != std::string::npos);
      BOOST_TEST(!fs::exists(scratch() / "refused" / "summary.json"));
    }
  }
}
