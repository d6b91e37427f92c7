// Steps-to-target with a stated resolution: the loop evaluates on a geometric grid,
// then replays from the last evaluation below the target and bisects the crossing. Checked
// against the same trial evaluated after every step (the definition itself: the first step
// meeting the target), through the real binary, with one process and with 2 MPI ranks (whose
// parameters live in shared memory: the replay must restore them too).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

const std::string kSynthetic =
    std::string(LBT_SOURCE_DIR) + "/experiments/configs/synthetic_sweep.toml";

struct Bracket {
  std::int64_t lo = -1, hi = -1, steps = -1;
  int refinement_evals = 0;
};

// One trial to the target; `launcher` is "" or "MPIEXEC -np 2 ".
Bracket run_trial(const std::string& launcher, std::int64_t batch, double lr,
                  const std::string& evaluation) {
  static int run = 0;
  const fs::path out = scratch() / ("run" + std::to_string(run++));
  const std::string cmd =
      "train --config " + kSynthetic + " --out " + out.string() +
      " --quiet --set train.threads=1 --set train.stop_at_target=true" +
      " --set train.steps=3000 --set train.global_batch=" + std::to_string(batch) +
      " --set optimizer.lr=" + std::to_string(lr) + " " + evaluation;
  const auto r =
      launcher.empty()
          ? run_lbt(cmd)
          : lbt::test::CliResult{
                std::system((launcher + LBT_BINARY + " " + cmd + " >/dev/null 2>&1").c_str()), "",
                ""};
  BOOST_TEST_REQUIRE(r.code == 0, cmd << "\n" << r.err);
  const auto s = nlohmann::json::parse(slurp(out / "summary.json"));
  BOOST_TEST_REQUIRE(s.at("status") == "reached_target", cmd);
  return {s.at("steps_lo"), s.at("steps_hi"), s.at("steps"), s.at("refinement_evals")};
}

const std::string kEveryStep = "--set train.eval_every=1 --set train.target_resolution=1";
const std::string kGeometric = "--set train.eval_every=4 --set train.eval_growth=1.5";

}  // namespace

BOOST_AUTO_TEST_CASE(five_percent_bracket_holds_the_step_found_by_evaluating_every_step) {
  for (std::int64_t batch : {4, 16, 64, 256}) {
    for (double lr : {0.03, 0.1}) {
      const Bracket exact = run_trial("", batch, lr, kEveryStep);
      BOOST_TEST(exact.hi - exact.lo == 1);  // every step evaluated: the bracket is one step
      const Bracket coarse = run_trial("", batch, lr, kGeometric);
      BOOST_TEST_CONTEXT("B=" << batch << " lr=" << lr << " exact " << exact.hi << ", bracket ("
                              << coarse.lo << ", " << coarse.hi << "]") {
        BOOST_TEST(coarse.lo < exact.hi);
        BOOST_TEST(exact.hi <= coarse.hi);
        BOOST_TEST(coarse.hi - coarse.lo <= std::max<double>(1.0, 0.05 * coarse.hi));
      }
      // Refined to the single step, the replay finds exactly the every-step answer.
      const Bracket refined =
          run_trial("", batch, lr, kGeometric + " --set train.target_resolution=0");
      BOOST_TEST(refined.hi == exact.hi, "B=" << batch << " lr=" << lr);
      BOOST_TEST(refined.lo == exact.hi - 1);
    }
  }
}

BOOST_AUTO_TEST_CASE(refinement_is_the_same_with_two_ranks_sharing_their_parameters) {
  const std::string mpi = std::string(MPIEXEC) + " -np 2 --oversubscribe ";
  const Bracket exact = run_trial(mpi, 64, 0.1, kEveryStep);
  const Bracket refined = run_trial(mpi, 64, 0.1, kGeometric + " --set train.target_resolution=0");
  BOOST_TEST(refined.refinement_evals > 0);
  BOOST_TEST(refined.hi == exact.hi);
  BOOST_TEST(refined.lo == exact.hi - 1);
}

// The reading is the first step of a grid fixed from step 0 meeting the target: the same bracket
// however often the run evaluates (until 2026-11-29 the walk's grid started at the replay start,
// which the cadence chose, and an EMA hovering at the target read up to 28% apart).
BOOST_AUTO_TEST_CASE(every_cadence_reads_the_same_bracket) {
  const Bracket first = run_trial("", 16, 0.1, kGeometric);
  for (const char* cadence : {"--set train.eval_every=1", "--set train.eval_every=7",
                              "--set train.eval_every=60", "--set train.eval_growth=2.0"}) {
    const Bracket b = run_trial("", 16, 0.1, cadence);
    BOOST_TEST_CONTEXT(cadence) {
      BOOST_TEST(b.lo == first.lo);
      BOOST_TEST(b.hi == first.hi);
    }
  }
}

// An EMA hovering at the target (B = 4, lr 0.2: met at steps 190-235, 1% short at 241, 2.5% at
// 305): an evaluation every 60 steps saw it near at 241 and clearly short at 305, and replayed
// from 305 to read (320, 336]; the replay now starts before the first evaluation near the
// target, and reads every step's (181, 190]. (A cadence that never sees it near can still miss
// such a crossing: docs/sweeps.md, train.target_band.)
BOOST_AUTO_TEST_CASE(a_metric_near_the_target_and_short_again_keeps_the_replays_start) {
  const Bracket every = run_trial("", 4, 0.2, "--set train.eval_every=1");
  const Bracket sparse = run_trial("", 4, 0.2, "--set train.eval_every=60");
  BOOST_TEST(every.lo == 181);
  BOOST_TEST(every.hi == 190);
  BOOST_TEST(sparse.lo == every.lo);
  BOOST_TEST(sparse.hi == every.hi);
}

// The checkpoint keeps the state at the last evaluation below the target: resumed between
// that evaluation and the crossing, the run replays from it, not from the resumed step. With
// 2 ranks the optimizer state is sharded, and the checkpoint gathers that state's copy too
// (until 2026-11-29 it dropped it, and the resumed run replayed from the resumed step).
namespace {

void resumed_inside_the_crossing_refines_it_as_the_uninterrupted_run(const std::string& launcher) {
  const std::string run = "train --config " + std::string(LBT_SOURCE_DIR) +
                          "/experiments/configs/synthetic_regression.toml --quiet"
                          " --set noise.enabled=false --set train.steps=4000 --set train.threads=1"
                          " --set train.eval_every=20 --set train.eval_growth=1.5"
                          " --set 'train.target=val_loss<=2.3' --set train.stop_at_target=true";
  const std::string tag = launcher.empty() ? "" : "_np2";
  const fs::path ref = scratch() / ("uninterrupted" + tag), cut = scratch() / ("resumed" + tag);
  BOOST_TEST_REQUIRE(run_lbt(run + " --out " + ref.string(), launcher).code == 0);
  BOOST_TEST_REQUIRE(run_lbt(run +
                                 " --set train.checkpoint_every=1 "
                                 "--set train.checkpoint_keep=100000 --out " +
                                 cut.string(),
                             launcher)
                         .code == 0);
  const auto r = nlohmann::json::parse(slurp(ref / "summary.json"));
  const std::int64_t lo = r.at("steps_lo"), hi = r.at("steps_hi");
  // The coarse evaluation that met the target: the last non-refinement line of eval.jsonl.
  std::int64_t coarse = 0;
  std::istringstream lines(slurp(ref / "eval.jsonl"));
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line);
    if (!e.contains("refinement")) coarse = e.at("step");
  }
  BOOST_TEST_REQUIRE(coarse > hi + 1);  // a crossing that needed refining
  const std::int64_t resume_at =
      (hi + coarse) / 2;  // after the true crossing, before the coarse one
  for (const auto& f : fs::directory_iterator(cut / "checkpoints")) {
    const std::string name = f.path().filename().string();
    if (std::stoll(name.substr(5)) > resume_at) fs::remove(f.path());
  }
  BOOST_TEST_REQUIRE(run_lbt("train --quiet --resume " + cut.string(), launcher).code == 0);
  const auto s = nlohmann::json::parse(slurp(cut / "summary.json"));
  BOOST_TEST(s.at("steps_lo").get<std::int64_t>() == lo);
  BOOST_TEST(s.at("steps_hi").get<std::int64_t>() == hi);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_run_resumed_inside_the_crossing_refines_it_as_the_uninterrupted_run) {
  resumed_inside_the_crossing_refines_it_as_the_uninterrupted_run("");
}

BOOST_AUTO_TEST_CASE(two_ranks_resumed_inside_the_crossing_refine_it_as_the_uninterrupted_run) {
  resumed_inside_the_crossing_refines_it_as_the_uninterrupted_run(std::string(MPIEXEC) +
                                                                  " -np 2 --oversubscribe ");
}

namespace {

// The steps of eval.jsonl's lines, in the order written.
std::vector<std::int64_t> eval_steps(const fs::path& run) {
  std::vector<std::int64_t> steps;
  std::istringstream lines(slurp(run / "eval.jsonl"));
  for (std::string line; std::getline(lines, line);)
    steps.push_back(nlohmann::json::parse(line).at("step"));
  return steps;
}

}  // namespace

// Every 25 steps on the 5% grid: 25, 51 (50's grid step), 77, ... A run resumed from step 50
// evaluates at 51 as the uninterrupted run did: the checkpoint keeps the next evaluation (from
// the step alone the resumed run went on to 77, and a sweep's rerun trial logged one line fewer).
BOOST_AUTO_TEST_CASE(a_run_resumed_between_a_cadence_step_and_its_grid_step_evaluates_there) {
  const std::string run = "train --config " + std::string(LBT_SOURCE_DIR) +
                          "/experiments/configs/fmnist_mlp.toml --quiet"
                          " --set data.train_limit=4000 --set data.validation_size=1000"
                          " --set model.spec=mlp:784-32-10 --set train.global_batch=64"
                          " --set train.steps=120 --set train.eval_every=25 --set train.threads=1";
  const fs::path ref = scratch() / "grid_uninterrupted", cut = scratch() / "grid_resumed";
  BOOST_TEST_REQUIRE(run_lbt(run + " --out " + ref.string()).code == 0);
  BOOST_TEST_REQUIRE(run_lbt(run +
                             " --set train.checkpoint_every=1 "
                             "--set train.checkpoint_keep=100000 --out " +
                             cut.string())
                         .code == 0);
  const std::vector<std::int64_t> want = eval_steps(ref);
  BOOST_TEST_REQUIRE(std::count(want.begin(), want.end(), 51) == 1);
  for (const auto& f : fs::directory_iterator(cut / "checkpoints"))
    if (std::stoll(f.path().filename().string().substr(5)) > 50) fs::remove(f.path());
  BOOST_TEST_REQUIRE(run_lbt("train --quiet --resume " + cut.string()).code == 0);
  BOOST_TEST(eval_steps(cut) == want, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(bad_eval_growth_and_resolution_are_one_line_errors) {
  for (const std::string bad :
       {"train.eval_growth=0.5", "train.target_resolution=1.5", "train.target_resolution=-0.1"}) {
    const auto r = run_lbt("train --config " + kSynthetic + " --check --set " + bad);
    BOOST_TEST(r.code == 2, bad);
    BOOST_TEST(r.err.find(bad.substr(0, bad.find('='))) != std::string::npos, r.err);
  }
}

// The definition, its horizon and its band are checked before any work, each error
// naming its key.
BOOST_AUTO_TEST_CASE(bad_target_definition_and_unresolvable_ema_horizon_are_one_line_errors) {
  for (const std::string bad :
       {"train.target_definition=emma", "train.ema_horizon=0.9", "train.ema_horizon=0",
        "train.target_band=-0.1", "train.ema_horizon=0.001 --set train.steps=1000"}) {
    const auto r = run_lbt("train --config " + kSynthetic + " --check --set " + bad);
    BOOST_TEST(r.code == 2, bad);
    BOOST_TEST(r.err.find(bad.substr(0, bad.find('='))) != std::string::npos, r.err);
  }
  // the raw first passage needs no EMA: a short horizon is no error there
  const auto ok = run_lbt("train --config " + kSynthetic +
                          " --check --set train.ema_horizon=0.001 --set train.steps=1000"
                          " --set train.target_definition=first_passage");
  BOOST_TEST(ok.code == 0, ok.err);
}

// summary.json names the definition and records both readings; the first passage's bracket is
// the evaluations' own (the raw weights' val_loss in eval.jsonl, read here independently).
BOOST_AUTO_TEST_CASE(summary_names_the_definition_and_records_both_readings) {
  const fs::path out = scratch() / "readings";
  const auto r = run_lbt("train --config " + kSynthetic + " --out " + out.string() +
                         " --quiet --set train.threads=1 --set train.stop_at_target=true"
                         " --set train.steps=3000 --set train.global_batch=16"
                         " --set optimizer.lr=0.05 " +
                         kGeometric);
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const auto s = nlohmann::json::parse(slurp(out / "summary.json"));
  BOOST_TEST(s.at("target_definition") == "ema");
  const auto& ema = s.at("readings").at("ema");
  const auto& raw = s.at("readings").at("first_passage");
  BOOST_TEST(ema.at("steps_hi") == s.at("steps_hi"));
  BOOST_TEST_REQUIRE(raw.at("steps_hi").is_number());  // the run went on until both met
  std::int64_t first = -1, before = 0;
  std::istringstream lines(slurp(out / "eval.jsonl"));
  std::vector<std::pair<std::int64_t, double>> evals;
  for (std::string line; std::getline(lines, line);) {
    const auto e = nlohmann::json::parse(line);
    evals.emplace_back(e.at("step"), e.at("val_loss"));
    BOOST_TEST(e.contains("ema"));
  }
  std::sort(evals.begin(), evals.end());
  for (const auto& [step, loss] : evals) {
    if (loss <= 0.14) {
      first = step;
      break;
    }
    before = step;
  }
  BOOST_TEST(raw.at("steps_hi").get<std::int64_t>() == first);
  BOOST_TEST(raw.at("steps_lo").get<std::int64_t>() == before);
  BOOST_TEST(ema.at("fluctuation").is_number());
}

// A resumed run whose definition changed is refused like any other config change.
BOOST_AUTO_TEST_CASE(a_resume_with_another_target_definition_is_refused) {
  const fs::path out = scratch() / "redefined";
  const std::string run = "train --config " + kSynthetic + " --quiet --set train.threads=1" +
                          " --set train.steps=200 --set train.global_batch=16 " + kGeometric;
  BOOST_TEST_REQUIRE(run_lbt(run + " --out " + out.string()).code == 0);
  const auto r =
      run_lbt(run + " --set train.target_definition=first_passage --resume " + out.string());
  BOOST_TEST(r.code != 0);
  BOOST_TEST(r.err.find("train.target_definition") != std::string::npos, r.err);
}

// A target the untrained model already meets measures nothing: lbt train refuses it before
// writing anything (it read "target reached at step 1; not met at step 0", the start never
// evaluated), a sweep stops at its first trial with the same line, and lbt noise, which reads no
// steps to a target, measures anyway.
BOOST_AUTO_TEST_CASE(a_target_the_untrained_model_meets_is_refused_before_training) {
  const std::string config = std::string(LBT_SOURCE_DIR) + "/experiments/configs/";
  const std::string loose = " --set train.target=\"val_loss<=1000\" --out ";
  const fs::path run = scratch() / "met_at_start";
  const auto t = run_lbt("train --config " + config + "synthetic_regression.toml --quiet " +
                         "--set train.steps=20" + loose + run.string());
  BOOST_TEST(t.code == 2, t.err);
  BOOST_TEST(t.err.find("error: the target val_loss<=1000 is met at step 0, before any training "
                        "(val_loss") != std::string::npos,
             t.err);
  BOOST_TEST(t.err.find("steps to it would measure nothing") != std::string::npos, t.err);
  BOOST_TEST(t.err.find("\nhint: tighten train.target") != std::string::npos, t.err);
  BOOST_TEST(!fs::exists(run));
  const fs::path sweep = scratch() / "met_at_start_sweep";
  const auto s = run_lbt("sweep --config " + config + "synthetic_sweep.toml --no-plots" + loose +
                         sweep.string());
  BOOST_TEST(s.code == 2, s.err);
  BOOST_TEST(s.err.find("so the sweep stopped: the target val_loss<=1000 is met at step 0") !=
                 std::string::npos,
             s.err);
  const auto n = run_lbt("noise --config " + config + "synthetic_regression.toml --steps 20" +
                         loose + (scratch() / "met_at_start_noise").string());
  BOOST_TEST(n.code == 0, n.err);
}
