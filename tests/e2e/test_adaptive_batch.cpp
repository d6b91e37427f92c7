// Adaptive batch size through `lbt train` (trainer/adaptive_batch.hpp): on the synthetic
// regression the batch of every step is the rule's (b_simple, or sqrt(B0 x B_simple)) applied to
// the EMA B_simple logged in noise.jsonl after the step before, clipped and rounded to the
// layout's step of 8 examples, with the hysteresis; a run resumed from the
// checkpoint written right after a batch change (the new accumulation chosen, no step taken
// with it yet) ends bit for bit where the uninterrupted run ends, with the same logs; bounds
// the layout cannot realise are a one-line error with exit code 2.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/run_lines.hpp"

namespace fs = std::filesystem;
using lbt::test::final_params;
using lbt::test::lines_without_timing;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

namespace {

const std::string kAdaptive =
    std::string("train --config ") + LBT_SOURCE_DIR +
    "/experiments/configs/synthetic_regression.toml --quiet --set train.batch_schedule=adaptive"
    " --set train.batch_min=16 --set train.batch_max=512 --set train.micro_batch=8"
    " --set train.steps=400 --set optimizer.lr=0.02 --set noise.every=1 --set noise.ema=0.9"
    " --set noise.window_steps=20 --set train.log_every=1 --set train.threads=1"
    " --set train.eval_every=40";

// Step s's global batch from metrics.jsonl (s counts steps done, from 1).
std::map<std::int64_t, std::int64_t> batches_by_step(const fs::path& run) {
  std::map<std::int64_t, std::int64_t> out;
  for (const auto& m : lines_without_timing(run / "metrics.jsonl"))
    out[m["step"].get<std::int64_t>()] = m["global_batch"].get<std::int64_t>();
  return out;
}

// Checks every step's batch against the rule: noise.jsonl's report at step index t (0-based)
// sets the batch of step t + 2 (1-based, metrics.jsonl); `rule` maps the EMA B_simple to the
// unclipped batch. Returns how many changes were seen.
template <class Rule>
int check_batches_follow(const fs::path& run, Rule rule, double hysteresis) {
  const auto batches = batches_by_step(run);
  const double step = 8.0, lo = 16.0, hi = 512.0;
  int changes = 0, checked = 0;
  for (const auto& n : lines_without_timing(run / "noise.jsonl")) {
    if (!n.contains("b_simple_ema")) continue;  // the method line
    const std::int64_t t = n["step"];
    if (!batches.count(t + 2)) continue;  // the last step's report decides nothing
    const std::int64_t before = batches.at(t + 1), after = batches.at(t + 2);
    if (n["b_simple_ema"].is_null()) {
      BOOST_TEST(after == before, "unresolved at step " << t);
      continue;
    }
    const double target = std::clamp(rule(n["b_simple_ema"].get<double>()), lo, hi);
    const double nearest = std::clamp(std::round(target / step) * step, lo, hi);
    const bool moves = std::abs(target - before) > hysteresis * before + step / 2;
    BOOST_TEST_CONTEXT("report at step " << t << ": rule batch " << target) {
      BOOST_TEST(after == (moves ? nearest : before));
      BOOST_TEST(after % 8 == 0);
      BOOST_TEST(std::abs(after - target) <= (moves ? step / 2 : hysteresis * before + step / 2));
    }
    changes += after != before;
    ++checked;
  }
  BOOST_TEST(checked > 50);
  return changes;
}

}  // namespace

// B = B_simple with the default hysteresis 0.1: at w = 0 the synthetic regression's B_simple is
// ~38 (synthetic_regression.toml), so the batch leaves 16 and grows as w approaches w*.
BOOST_AUTO_TEST_CASE(b_simple_rule_follows_the_logged_noise_scale) {
  const fs::path run = scratch() / "b_simple";
  const auto r = run_lbt(kAdaptive + " --set noise.estimator=per_example --out " + run.string());
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const int changes = check_batches_follow(
      run, [](double b) { return b; }, 0.1);
  BOOST_TEST(changes >= 2);
  // The method line says its batches are the first steps' (it named batch 16 without a word).
  const auto method = lines_without_timing(run / "noise.jsonl").front();
  BOOST_TEST(method.value("layout", "").find("the batch varies") != std::string::npos, method);
}

// With log_every far apart, every change still has its metrics.jsonl line (next_global_batch,
// at the step that decided it): replaying the lines from batch_min gives every line's batch.
BOOST_AUTO_TEST_CASE(every_batch_change_has_its_metrics_line) {
  const fs::path run = scratch() / "sparse_log";
  const auto r = run_lbt(kAdaptive +
                         " --set noise.estimator=per_example --set train.log_every=100"
                         " --out " +
                         run.string());
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  std::int64_t batch = 16;  // train.batch_min
  int changes = 0;
  const auto lines = lines_without_timing(run / "metrics.jsonl");
  for (const auto& m : lines) {
    BOOST_TEST(m["global_batch"].get<std::int64_t>() == batch, "step " << m["step"]);
    if (m.contains("next_global_batch")) {
      BOOST_TEST(m["next_global_batch"].get<std::int64_t>() != batch);
      batch = m["next_global_batch"].get<std::int64_t>();
      ++changes;
    } else if (&m != &lines.back()) {  // the last step (the examples budget) has its line
      BOOST_TEST(m["step"].get<std::int64_t>() % 100 == 0, "step " << m["step"]);
    }
  }
  BOOST_TEST(changes >= 2);
}

// B = sqrt(B0 x B_simple) with B0 = 200 and no hysteresis: every report moves the batch to the
// multiple of 8 nearest round(sqrt(200 x B_simple_ema)), clipped to [16, 512].
BOOST_AUTO_TEST_CASE(sqrt_rule_follows_the_logged_noise_scale) {
  const fs::path run = scratch() / "sqrt";
  const auto r = run_lbt(kAdaptive +
                         " --set noise.estimator=per_example --set train.batch_rule=sqrt"
                         " --set train.batch_sqrt_scale=200 --set train.batch_hysteresis=0"
                         " --out " +
                         run.string());
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const int changes = check_batches_follow(
      run, [](double b) { return std::sqrt(200.0 * b); }, 0.0);
  BOOST_TEST(changes >= 2);
  // sqrt(200 x 38) ~ 87: well inside the bounds, not where b_simple would go.
  const auto batches = batches_by_step(run);
  BOOST_TEST(batches.rbegin()->second > 64);
}

BOOST_AUTO_TEST_CASE(resume_right_after_a_batch_change_is_bit_exact) {
  const fs::path whole = scratch() / "whole", resumed = scratch() / "resumed";
  const auto a = run_lbt(kAdaptive + " --out " + whole.string() +
                         " --set train.checkpoint_every=1 --set train.checkpoint_keep=100000"
                         " --set train.checkpoint_every_seconds=0");
  BOOST_TEST_REQUIRE(a.code == 0, a.err);
  const auto metrics = lines_without_timing(whole / "metrics.jsonl");
  // The first step count c after which the batch changes: checkpoint c holds the new
  // accumulation, not yet used.
  std::int64_t change = -1;
  for (std::size_t k = 1; k < metrics.size() && change < 0; ++k) {
    if (metrics[k]["global_batch"] != metrics[k - 1]["global_batch"] && k >= 10)
      change = static_cast<std::int64_t>(k);
  }
  BOOST_TEST_REQUIRE(change > 0);
  BOOST_TEST_MESSAGE("resuming from step " << change << ": batch "
                                           << metrics[change - 1]["global_batch"] << " -> "
                                           << metrics[change]["global_batch"]);
  fs::copy(whole, resumed, fs::copy_options::recursive);
  for (const auto& entry : fs::directory_iterator(resumed / "checkpoints")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0) continue;
    const std::int64_t step = std::stoll(name.substr(name.find('_') + 1));
    if (step > change) fs::remove(entry.path());
  }
  const auto b = run_lbt("train --resume " + resumed.string() + " --quiet");
  BOOST_TEST_REQUIRE(b.code == 0, b.err);
  BOOST_TEST(final_params(resumed) == final_params(whole));
  BOOST_TEST(lines_without_timing(resumed / "metrics.jsonl") == metrics);
  BOOST_TEST(lines_without_timing(resumed / "eval.jsonl") ==
             lines_without_timing(whole / "eval.jsonl"));
  const auto summary_a = nlohmann::json::parse(slurp(whole / "summary.json"));
  const auto summary_b = nlohmann::json::parse(slurp(resumed / "summary.json"));
  BOOST_TEST(summary_a["examples"] == summary_b["examples"]);
  // Where the batch ended, not where it began (summary's global_batch is the first steps').
  BOOST_TEST(summary_a["global_batch_last"] == metrics.back()["global_batch"]);
  BOOST_TEST(summary_b["global_batch_last"] == summary_a["global_batch_last"]);
  BOOST_TEST(summary_a["global_batch"] == metrics.front()["global_batch"]);
}

// One line on stderr ("error: ..." naming the key) plus its hint, exit code 2.
BOOST_AUTO_TEST_CASE(bounds_the_layout_cannot_realise_are_refused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" --set train.batch_min=20", "train.batch_min"},            // not 8 x k
      {" --set train.batch_max=500", "train.batch_max"},           // not 8 x k
      {" --set train.batch_max=8", "train.batch_max"},             // below batch_min
      {" --set train.accum_steps=2", "train.accum_steps"},         // the batch moves it
      {" --set noise.enabled=false", "noise.enabled"},             // nothing to follow
      {" --set train.sync_every=4", "train.batch_schedule"},       // local SGD
      {" --set train.batch_rule=sqrt", "train.batch_sqrt_scale"},  // no B0
      {" --set train.batch_rule=sqrt --set train.batch_sqrt_scale=-5", "train.batch_sqrt_scale"},
      {" --set train.batch_max=1048576", "fewer than train.batch_max's batch"},  // 61440 examples
      {" --set train.batch_schedule=fixed", "is not used with train.batch_schedule = \"fixed\""},
  };
  for (const auto& [set, key] : cases) {
    const auto r = run_lbt(kAdaptive + set + " --out " + (scratch() / "refused").string());
    BOOST_TEST_CONTEXT(set << ": " << r.err) {
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.err.rfind("error: ", 0) == 0);
      BOOST_TEST(r.err.substr(0, r.err.find('\n')).find(key) != std::string::npos);
    }
  }
}
