// `lbt cbs` end to end on synthetic linear regression, whose noise scale B_simple grows as the
// weights approach w* (McCandlish et al. 2018, App. A): the local critical batch measured by
// branching (Merrill et al. 2025) grows over training as B_simple does, each interval holds its
// estimate, and the files say so. Then bad input: one error line and one hint, exit 2, before
// any branch runs.
#include <boost/test/unit_test.hpp>

#include <unistd.h>
#include <cmath>
#include <fstream>
#include <string>

#include "cbs_support.hpp"
#include "experiments/dir_lock.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/data/synthetic.hpp"

namespace fs = std::filesystem;
using lbt::test::CbsReference;
using lbt::test::lines_starting;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

namespace {

// Plain SGD at B = 16, LR 0.05, sqrt scaling (as experiments/configs/synthetic_sweep.toml);
// checkpoints every 5 steps. Near w = 0 (step 5) the gradient dominates the noise, B_simple =
// d (1 + s^2 / |w - w*|^2) + 1 is about d + 1 = 17, and a larger batch at sqrt-scaled LR makes
// less progress per example; near the optimum (step 300) the noise dominates, B_simple is in
// the hundreds, and larger batches lose nothing. B_simple is measured online by both
// estimators over windows of 10 steps.
const fs::path& reference() {
  static const fs::path dir = [] {
    CbsReference r;
    r.batch = 16;
    r.micro = 4;
    r.steps = 300;
    r.momentum = 0.0;
    r.scaling = "sqrt";
    r.checkpoint_every = 5;
    r.examples = 8192;
    r.noise = 0.5;
    r.noise_keys = "every = 1\nwindow_steps = 10\nestimator = \"both\"\n";
    return lbt::test::train_reference("ref_cbs", r);
  }();
  return dir;
}

// B_simple in closed form (trainer/data/synthetic.hpp) at a checkpoint's weights: the model's
// first d parameters are the Linear layer's weights (its bias is the last).
double closed_form_b_simple(std::int64_t step) {
  const auto ck = lbt::trainer::read_checkpoint(
      lbt::trainer::checkpoint_path(reference() / "checkpoints", step));
  std::vector<float> params(17);
  ck.copy_to("params", std::span<float>(params));
  params.resize(16);
  const auto problem = lbt::data::make_linear_regression(8192, 16, 0.5, 3);
  return lbt::data::linear_regression_b_simple(params, problem.w_star, 0.5);
}

std::int64_t k_max_of(const nlohmann::json& p) {
  return p["k_max"].get<std::int64_t>();
}

}  // namespace

BOOST_AUTO_TEST_CASE(cbs_grows_over_training_as_b_simple_does_and_its_interval_holds_it) {
  const fs::path out = scratch() / "cbs";
  const std::string args = "cbs --from " + reference().string() +
                           " --at-steps 5,40,300 --multipliers 1,2,4,8,16 --examples 512 "
                           "--seeds 3 --out " +
                           out.string();
  const auto r = run_lbt(args + " --jobs 2");
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  BOOST_TEST_MESSAGE(r.out);
  // The premise, from the weights themselves: B_simple grows along the run.
  const double b5 = closed_form_b_simple(5), b300 = closed_form_b_simple(300);
  BOOST_TEST_MESSAGE("closed-form B_simple: step 5 " << b5 << ", step 300 " << b300);
  BOOST_TEST(b300 > 4 * b5);
  const auto j = nlohmann::json::parse(slurp(out / "cbs.json"));
  const auto& early = j["points"][0];
  const auto& late = j["points"][2];
  BOOST_TEST(early["step"] == 5);
  BOOST_TEST(late["step"] == 300);
  BOOST_TEST(k_max_of(late) > k_max_of(early));
  // Early, even k = 2 is outside: a bound, CBS < 32, and cbs itself null (never 0 or NaN).
  BOOST_TEST(early["bound"]["kind"] == "below");
  BOOST_TEST(early["bound"]["batch"] == 32);
  BOOST_TEST(early["cbs"].is_null());
  for (const auto& p : j["points"]) {
    BOOST_TEST_CONTEXT("step " << p["step"]) {
      BOOST_TEST(p["tolerance_measured"] == true);
      BOOST_TEST(p["tolerance"].get<double>() > 0.0);
      // The reference logged the noise scale at every step: the record of that step (noise.jsonl
      // counts the step whose gradient it measured from 0, so the gradient at the checkpoint's
      // weights; the last checkpoint's step was never taken: the one before), its value or,
      // where the window did not resolve it, its lower bound.
      const std::int64_t logged = p["b_simple_step"].get<std::int64_t>();
      BOOST_TEST((logged == p["step"].get<std::int64_t>() || (p["step"] == 300 && logged == 299)));
      BOOST_TEST((p["b_simple"].is_number() || p["b_simple_ci95"][0].is_number()));
      const auto& iv = p["cbs_interval"];
      const std::int64_t est = k_max_of(p) * 16;
      BOOST_TEST(iv[0].get<std::int64_t>() <= est);
      // The upper end is the next batch tried above a seed's reading (never [x, x]), or open.
      BOOST_TEST((iv[1].is_null() || est < iv[1].get<std::int64_t>()), iv.dump());
      BOOST_TEST(p["branches"].size() == 15u);  // 5 multipliers x 3 seeds
    }
  }
  // lbt cbs's own k = 1 branch in the reference's order continues the reference bit for bit
  // (where it runs with the reference's thread count: GEMMs split their sums by thread).
  const fs::path k1 = out / "branches" / "step40_k1_s0";
  if (slurp(k1 / "config.toml").find("threads = 1\n") != std::string::npos) {
    const auto ref = lbt::test::metrics_by_step(reference());
    const auto br = lbt::test::metrics_by_step(k1);
    BOOST_TEST_REQUIRE(br.size() == 32u);  // 512 examples at 16: steps 41..72
    for (const auto& [step, line] : br)
      BOOST_TEST(line["loss"].get<double>() == ref.at(step)["loss"].get<double>(), "step " << step);
  } else {
    BOOST_TEST_MESSAGE("skipped the bit-for-bit check: the branches ran with other threads");
  }
  BOOST_TEST(lines_starting(slurp(out / "cbs.csv"), "5,16,512,").size() == 1u);
  BOOST_TEST(lines_starting(slurp(out / "branches.csv"), "step300_k16_s2,300,16,2,").size() == 1u);
  BOOST_TEST(fs::exists(out / "cbs.png"), slurp(out / "plot.log"));
  // A rerun reads the finished branches and runs none.
  const auto again = run_lbt(args + " --no-plots");
  BOOST_TEST_REQUIRE(again.code == 0, again.err);
  BOOST_TEST(again.out.find("(0 run now)") != std::string::npos, again.out);
}

BOOST_AUTO_TEST_CASE(a_branch_that_diverges_is_a_recorded_outcome_not_a_failure) {
  // Linear scaling to k = 128: SGD's LR 0.05 x 128 = 6.4 is past 2 / lambda_max = 2 for these
  // unit-variance inputs, so that branch's loss grows by (6.4 - 1)^2 per step until the
  // trainer's divergence check stops it.
  const fs::path out = scratch() / "cbs_diverged";
  const auto r = run_lbt("cbs --from " + reference().string() +
                         " --at-steps 300 --multipliers 1,2,128 --scaling linear --examples 16384 "
                         "--seeds 2 --jobs 2 --no-plots --out " +
                         out.string());
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const auto p = nlohmann::json::parse(slurp(out / "cbs.json"))["points"][0];
  for (const auto& b : p["branches"]) {
    BOOST_TEST_CONTEXT(b["name"]) {
      BOOST_TEST(b["status"] == (b["k"] == 128 ? "diverged" : "completed"));
      BOOST_TEST(b["val_loss"].is_null() == (b["k"] == 128));
    }
  }
  BOOST_TEST(p["val_loss"]["128"][0].is_null());
  BOOST_TEST(p["k_max"].get<std::int64_t>() <= 2);  // k = 128 is outside
  // cbs.csv counts the outcomes: 4 completed, 2 diverged, 0 failed.
  const auto rows = lines_starting(slurp(out / "cbs.csv"), "300,16,");
  BOOST_TEST_REQUIRE(rows.size() == 1u);
  BOOST_TEST(rows[0].find(",4,2,0,") != std::string::npos, rows[0]);
  BOOST_TEST(lines_starting(slurp(out / "branches.csv"), "step300_k128_s1,300,128,1,").size() ==
             1u);
}

BOOST_AUTO_TEST_CASE(a_rerun_continues_adds_branches_and_refuses_other_settings) {
  const fs::path out = scratch() / "cbs_rerun";
  const std::string common = "cbs --from " + reference().string() +
                             " --multipliers 1,2 --seeds 2 --no-plots --out " + out.string();
  const auto first = run_lbt(common + " --at-steps 5 --examples 256");
  BOOST_TEST_REQUIRE(first.code == 0, first.err);
  BOOST_TEST(first.out.find("branches: 4 (4 run now)") != std::string::npos, first.out);
  // Another step adds its branches; the finished ones are read back.
  const auto more = run_lbt(common + " --at-steps 5,10 --examples 256");
  BOOST_TEST_REQUIRE(more.code == 0, more.err);
  BOOST_TEST(more.out.find("branches: 8 (4 run now)") != std::string::npos, more.out);
  // A branch without its final summary (a killed one, with no checkpoint yet) runs again.
  fs::remove(out / "branches" / "step10_k2_s1" / "summary.json");
  const auto again = run_lbt(common + " --at-steps 5,10 --examples 256");
  BOOST_TEST_REQUIRE(again.code == 0, again.err);
  BOOST_TEST(again.out.find("branches: 8 (1 run now)") != std::string::npos, again.out);
  // A branch of another length than the plan's (a measured length moves with the largest
  // multiplier) runs again from the start: kept, it compared other training under its name.
  const fs::path config = out / "branches" / "step5_k1_s0" / "config.toml";
  const std::string text = slurp(config);
  const auto steps = text.find("\nsteps = ") + 9;  // [train]'s, the branch's end
  std::ofstream(config) << text.substr(0, steps) + "7" + text.substr(text.find('\n', steps));
  const auto relength = run_lbt(common + " --at-steps 5,10 --examples 256");
  BOOST_TEST_REQUIRE(relength.code == 0, relength.err);
  BOOST_TEST(relength.out.find("branches: 8 (1 run now)") != std::string::npos, relength.out);
  BOOST_TEST(relength.err.find("[cbs] step5_k1_s0: its length differs from this plan's") !=
                 std::string::npos,
             relength.err);
  BOOST_TEST(slurp(config) == text);
  // Branches of another length would mix two measurements under the same names.
  const auto other = run_lbt(common + " --at-steps 5 --examples 512");
  BOOST_TEST(other.code == 2);
  BOOST_TEST(lines_starting(other.err, "error:").size() == 1u, other.err);
  BOOST_TEST(other.err.find("holds branches of other settings") != std::string::npos, other.err);
  // While one lbt cbs holds the directory, a second one is refused.
  {
    const lbt::experiments::DirLock held(out / "cbs.lock",
                                         lbt::experiments::DirLock::Mode::kExclusive, "lbt cbs");
    const auto second = run_lbt(common + " --at-steps 5 --examples 256");
    BOOST_TEST(second.code == 2);
    // Named as lbt cbs's directory and owner, not a sweep's.
    BOOST_TEST(second.err.find("error: lbt cbs directory ") == 0, second.err);
    BOOST_TEST(second.err.find(" is in use by lbt cbs (pid " + std::to_string(::getpid())) !=
                   std::string::npos,
               second.err);
  }
}

BOOST_AUTO_TEST_CASE(a_step_without_a_checkpoint_names_the_steps_that_have_one) {
  const auto r = run_lbt("cbs --from " + reference().string() + " --at-steps 7 --out " +
                         (scratch() / "bad_step").string());
  BOOST_TEST(r.code == 2);
  const auto errors = lines_starting(r.err, "error:");
  BOOST_TEST_REQUIRE(errors.size() == 1u, r.err);
  BOOST_TEST(errors[0].find("no checkpoint of step 7") != std::string::npos, r.err);
  BOOST_TEST(errors[0].find("5,10,15") != std::string::npos, r.err);
  BOOST_TEST(lines_starting(r.err, "hint:").size() == 1u, r.err);
  BOOST_TEST(!fs::exists(scratch() / "bad_step"));
}

// Multipliers with none above 1 leave nothing to read the critical batch from: refused before
// any branch (every point read "CBS < 0" before).
// So is a batch larger than the training set (8192 examples less 1024 for validation: 7168;
// k = 1024 asks for 8192). Also seeds and lengths past what a plan holds (2^31 - 1 seeds:
// std::bad_alloc; 2^63 - 1 examples wrapped when rounded up to whole steps, and every branch
// failed).
BOOST_AUTO_TEST_CASE(multipliers_without_one_above_1_are_refused_before_any_branch) {
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--multipliers 1,1", "--multipliers has no multiplier above 1"},
           {"--multipliers 1,2,1024", "larger than the training set (7168"},
           {"--multipliers 1,2 --seeds 2147483647", "is more than 1000 (each seed"},
           {"--multipliers 1,2 --examples 9223372036854775807", "is more than 10^15 examples"}}) {
    const auto r = run_lbt("cbs --from " + reference().string() + " --at-steps 5 " + args +
                           " --out " + (scratch() / "only_1").string());
    BOOST_TEST(r.code == 2);
    const auto errors = lines_starting(r.err, "error:");
    BOOST_TEST_REQUIRE(errors.size() == 1u, r.err);
    BOOST_TEST(errors[0].find(says) != std::string::npos, r.err);
    BOOST_TEST(lines_starting(r.err, "hint:").size() == 1u, r.err);
    BOOST_TEST(!fs::exists(scratch() / "only_1"));
  }
}

// Every branch trains the same examples: --examples 100 at B = 16, k = 1, 2, 4 rounds up to 128
// (each k floored its own: 96, 96, 64), with a warning. A step given twice runs once (it ran and
// was reported twice). A bound prints the seeds' interval (it printed "< 32" alone): at step 5 a
// larger batch falls less per example, so at a tolerance of 1e-9 each seed reads k = 1 (one
// seed alone: the grid's step).
// Multipliers with no length in common within 64 steps at the largest are refused.
BOOST_AUTO_TEST_CASE(branches_train_the_same_examples_a_step_runs_once_a_bound_has_its_interval) {
  const fs::path out = scratch() / "cbs_rounded";
  const std::string from = "cbs --from " + reference().string() + " --at-steps ";
  const auto r = run_lbt(from + "5,5 --multipliers 1,2,4 --examples 100 --seeds 2 --jobs 2 " +
                         "--tolerance 1e-9 --no-plots --out " + out.string());
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  BOOST_TEST(r.err.find("--examples 100 rounded up to 128") != std::string::npos, r.err);
  const auto j = nlohmann::json::parse(slurp(out / "cbs.json"));
  BOOST_TEST_REQUIRE(j["points"].size() == 1u);
  BOOST_TEST(j["points"][0]["branches"].size() == 6u);
  for (const auto& b : j["points"][0]["branches"]) BOOST_TEST(b["examples"] == 128, b["name"]);
  BOOST_TEST(r.out.find("< 32 [16-32]") != std::string::npos, r.out);
  const auto one = run_lbt(from + "5 --multipliers 1,2 --examples 128 --seeds 1 --tolerance 1e-9 " +
                           "--no-plots --out " + (scratch() / "cbs_one_seed").string());
  BOOST_TEST_REQUIRE(one.code == 0, one.err);
  const auto one_point = nlohmann::json::parse(slurp(scratch() / "cbs_one_seed" / "cbs.json"));
  BOOST_TEST(one_point["points"][0]["cbs_interval"] == nlohmann::json::array({16, 32}));
  const auto refused =
      run_lbt(from + "5 --multipliers 1,3,5,7,11 --out " + (scratch() / "cbs_no_common").string());
  BOOST_TEST(refused.code == 2);
  BOOST_TEST(refused.err.find("no branch length within 64 steps") != std::string::npos,
             refused.err);
}

// The reference's ranks as its summary.json records them: 0 divided by zero (SIGFPE), a string
// threw nlohmann's own message, 1e300 wrapped (2026-11-29 audit).
BOOST_AUTO_TEST_CASE(a_reference_summary_whose_world_size_is_no_rank_count_is_refused) {
  for (const std::string bad : {"0", "\"x\"", "1e300", "-3"}) {
    BOOST_TEST_CONTEXT(bad) {
      const fs::path dir = scratch() / "bad_world_size";
      fs::remove_all(dir);
      fs::copy(reference(), dir, fs::copy_options::recursive);
      std::ofstream(dir / "summary.json", std::ios::trunc)
          << "{\"status\": \"completed\", \"world_size\": " << bad << "}\n";
      const auto r = run_lbt("cbs --from " + dir.string() + " --at-steps 5 --no-plots");
      BOOST_TEST(r.code == 3, r.err);
      const auto errors = lines_starting(r.err, "error:");
      BOOST_TEST_REQUIRE(errors.size() == 1u, r.err);
      BOOST_TEST(errors[0].find("summary.json: world_size ") != std::string::npos, r.err);
      BOOST_TEST(errors[0].find(" is not a number of ranks") != std::string::npos, r.err);
    }
  }
}

// A reference whose config no longer matches its checkpoints (a bias dropped from the model):
// refused before any branch, naming the key (every branch failed, exit 1, until 2026-11-29; and
// an edited LR was trained at the checkpoint's without a word).
BOOST_AUTO_TEST_CASE(a_config_its_checkpoints_were_not_written_with_is_refused) {
  const fs::path dir = scratch() / "changed_model";
  fs::remove_all(dir);
  fs::copy(reference(), dir, fs::copy_options::recursive);
  std::string config = slurp(dir / "config.toml");
  const auto spec = config.find("\nspec = ");
  BOOST_REQUIRE(spec != std::string::npos);
  config.insert(config.find('\n', spec + 1) - 1, ":nobias");  // before the closing quote
  std::ofstream(dir / "config.toml", std::ios::trunc) << config;
  const auto r = run_lbt("cbs --from " + dir.string() +
                         " --at-steps 5 --multipliers 2 --seeds 2 --examples 256 --no-plots");
  BOOST_TEST(r.code == 3, r.err);
  const auto errors = lines_starting(r.err, "error: ");
  BOOST_TEST_REQUIRE(errors.size() == 1u, r.err);
  for (const char* says : {"step_0000000005.ckpt is another run's: its config differs from",
                           "model.spec: 'linear:16-1' -> 'linear:16-1:nobias'"})
    BOOST_TEST(errors[0].find(says) != std::string::npos, r.err);
  BOOST_TEST(!fs::exists(dir / "cbs" / "branches"));
}

BOOST_AUTO_TEST_CASE(a_directory_that_is_not_a_run_is_one_error_and_one_hint) {
  fs::create_directories(scratch() / "not_a_run");
  const auto r = run_lbt("cbs --from " + (scratch() / "not_a_run").string() + " --at-steps 5");
  BOOST_TEST(r.code == 2);
  const auto errors = lines_starting(r.err, "error:");
  BOOST_TEST_REQUIRE(errors.size() == 1u, r.err);
  BOOST_TEST(errors[0].find("is not a run directory") != std::string::npos, r.err);
  BOOST_TEST(lines_starting(r.err, "hint:").size() == 1u, r.err);
}

BOOST_AUTO_TEST_CASE(a_run_whose_config_does_not_resolve_gives_lbt_train_s_error) {
  const fs::path dir = scratch() / "broken_run";
  fs::create_directories(dir);
  std::ofstream(dir / "config.toml") << "[train]\nglobal_batch = -4\n";
  const auto cbs = run_lbt("cbs --from " + dir.string() + " --at-steps 5");
  const auto train = run_lbt("train --resume " + dir.string());
  BOOST_TEST(cbs.code == 2);
  BOOST_TEST(train.code == 2);
  const auto errors = lines_starting(cbs.err, "error:");
  BOOST_TEST_REQUIRE(errors.size() == 1u, cbs.err);
  BOOST_TEST((errors == lines_starting(train.err, "error:")), cbs.err << "\nvs\n" << train.err);
  BOOST_TEST(lines_starting(cbs.err, "hint:").size() == 1u, cbs.err);
}

BOOST_AUTO_TEST_CASE(one_seed_without_a_tolerance_is_refused_the_default_needs_a_spread) {
  const auto r = run_lbt("cbs --from " + reference().string() + " --at-steps 5 --seeds 1 --out " +
                         (scratch() / "one_seed").string());
  BOOST_TEST(r.code == 2);
  BOOST_TEST(lines_starting(r.err, "error:").size() == 1u, r.err);
  BOOST_TEST(r.err.find("--tolerance") != std::string::npos, r.err);
}

// A run's logs edited by hand or by another program: lines of eval.jsonl and noise.jsonl whose
// "step" is no whole number (a string, 1e300, 2.5) are skipped as torn lines are, so lbt cbs
// reads what it reads without them (a string step ended lbt cbs with exit 1 and a bare parser
// message; 1e300 reached a float-to-int64 conversion, undefined behaviour).
BOOST_AUTO_TEST_CASE(log_lines_whose_step_is_no_whole_number_are_skipped_as_torn_lines_are) {
  const fs::path edited = scratch() / "edited_logs";
  fs::remove_all(edited);
  fs::copy(reference(), edited, fs::copy_options::recursive);
  for (const char* file : {"eval.jsonl", "noise.jsonl"}) {
    std::ofstream out(edited / file, std::ios::app);
    for (const char* step : {"\"x\"", "1e300", "2.5"}) {
      out << "{\"step\": " << step << ", \"estimator\": \"two_batch\", \"b_simple\": 1.0, "
          << "\"b_simple_ci95\": [0.5, 2.0], \"val_loss\": 0.001}\n";
    }
  }
  const std::string args = " --at-steps 5 --multipliers 1,2 --seeds 2 --examples 256 --out ";
  const auto mine = run_lbt("cbs --from " + edited.string() + args + (edited / "cbs").string());
  BOOST_TEST_REQUIRE(mine.code == 0, mine.err);
  const auto plain =
      run_lbt("cbs --from " + reference().string() + args + (scratch() / "plain_cbs").string());
  BOOST_TEST_REQUIRE(plain.code == 0, plain.err);
  const auto point = [](const fs::path& dir) {
    return nlohmann::json::parse(slurp(dir / "cbs.json"))["points"].at(0);
  };
  const nlohmann::json a = point(edited / "cbs"), b = point(scratch() / "plain_cbs");
  for (const char* key : {"b_simple", "b_simple_ci95", "b_simple_step", "reference_loss",
                          "loss_at_checkpoint", "val_loss", "cbs", "bound"}) {
    BOOST_TEST(a[key] == b[key], key << ": " << a[key].dump() << " vs " << b[key].dump());
  }
}

// A checkpoint edited and its checksum recomputed: a header field of another type, or a batch
// of 0 (a division by it followed), is one error naming the file, exit 3, before any branch.
BOOST_AUTO_TEST_CASE(a_checkpoint_header_lbt_never_writes_is_refused_before_any_branch) {
  const fs::path edited = scratch() / "edited_header";
  for (const auto& [value, says] : {std::pair{nlohmann::json("x"), "does not hold what lbt writes"},
                                    std::pair{nlohmann::json(0), "is no point of a run"}}) {
    fs::remove_all(edited);
    fs::copy(reference(), edited, fs::copy_options::recursive);
    const fs::path file = lbt::trainer::checkpoint_path(edited / "checkpoints", 5);
    auto ck = lbt::trainer::read_checkpoint(file);
    ck.header["global_batch"] = value;
    std::vector<lbt::trainer::CheckpointSection> sections;
    for (const auto& [name, bytes] : ck.sections) sections.push_back({name, bytes});
    lbt::trainer::write_checkpoint(file, ck.header, sections);
    const auto r = run_lbt("cbs --from " + edited.string() + " --at-steps 5 --out " +
                           (edited / "cbs").string());
    BOOST_TEST(r.code == 3, r.err);
    const auto errors = lines_starting(r.err, "error:");
    BOOST_TEST_REQUIRE(errors.size() == 1u, r.err);
    BOOST_TEST(errors[0].find(file.string()) != std::string::npos, r.err);
    BOOST_TEST(errors[0].find(says) != std::string::npos, r.err);
    BOOST_TEST(!fs::exists(edited / "cbs" / "branches"));
  }
}
