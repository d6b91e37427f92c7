// `lbt cbs` end to end on synthetic linear regression, whose noise scale B_simple grows as the
// weights approach w* (McCandlish et al. 2018, App. A): the local critical batch measured by
// branching (Merrill et al. 2025) grows over training as B_simple does, each interval holds its
// estimate, and the files say so. Then bad input: one error line and one hint, exit 2, before
// any branch runs.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>

#include "cbs_support.hpp"

namespace fs = std::filesystem;
using lbt::test::CbsReference;
using lbt::test::lines_starting;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

namespace {

// SGD at B = 8 with LR 0.05 (linear scaling: 0.8 at k = 16, inside SGD's 2 / lambda_max = 2
// for unit-variance inputs); checkpoints at 5 and 300: near w = 0 the gradient dominates the
// noise (B_simple ~ (d + 1)(1 + s^2 / |w*|^2)), near the optimum the noise dominates.
const fs::path& reference() {
  static const fs::path dir = [] {
    CbsReference r;
    r.batch = 8;
    r.micro = 4;
    r.steps = 300;
    r.momentum = 0.0;
    r.checkpoint_every = 5;
    r.examples = 8192;
    r.noise = 0.5;
    return lbt::test::train_reference("ref_cbs", r);
  }();
  return dir;
}

std::int64_t k_max_of(const nlohmann::json& p) {
  return p["k_max"].get<std::int64_t>();
}

}  // namespace

BOOST_AUTO_TEST_CASE(cbs_grows_over_training_as_b_simple_does_and_its_interval_holds_it) {
  const fs::path out = scratch() / "cbs";
  const auto r = run_lbt("cbs --from " + reference().string() + " --at-steps 5,300 " +
                         "--multipliers 1,2,4,8,16 --examples 1024 --seeds 3 --jobs 2 --out " +
                         out.string());
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  const auto j = nlohmann::json::parse(slurp(out / "cbs.json"));
  const auto& early = j["points"][0];
  const auto& late = j["points"][1];
  BOOST_TEST_MESSAGE("early: " << early.dump() .substr(0, 600));
  BOOST_TEST_MESSAGE("late: " << late.dump().substr(0, 600));
  BOOST_TEST(early["step"] == 5);
  BOOST_TEST(late["step"] == 300);
  BOOST_TEST(k_max_of(late) > k_max_of(early));
  BOOST_TEST_REQUIRE(early["b_simple"].is_number());
  BOOST_TEST_REQUIRE(late["b_simple"].is_number());
  BOOST_TEST(late["b_simple"].get<double>() > early["b_simple"].get<double>());
  for (const auto& p : j["points"]) {
    BOOST_TEST_CONTEXT("step " << p["step"]) {
      BOOST_TEST(p["tolerance_measured"] == true);
      BOOST_TEST(p["tolerance"].get<double>() > 0.0);
      const auto& iv = p["cbs_interval"];
      const std::int64_t est = k_max_of(p) * 8;
      BOOST_TEST(iv[0].get<std::int64_t>() <= est);
      BOOST_TEST(est <= iv[1].get<std::int64_t>());
      BOOST_TEST(p["branches"].size() == 15u);  // 5 multipliers x 3 seeds
    }
  }
  BOOST_TEST(fs::exists(out / "cbs.csv"));
  BOOST_TEST(lines_starting(slurp(out / "cbs.csv"), "5,8,1024,").size() == 1u);
  BOOST_TEST(fs::exists(out / "branches.csv"));
  BOOST_TEST(fs::exists(out / "cbs.png"), slurp(out / "plot.log"));
  // A rerun reads the finished branches and runs none.
  const auto again = run_lbt("cbs --from " + reference().string() + " --at-steps 5,300 " +
                             "--multipliers 1,2,4,8,16 --examples 1024 --seeds 3 --out " +
                             out.string() + " --no-plots");
  BOOST_TEST_REQUIRE(again.code == 0, again.err);
  BOOST_TEST(again.out.find("(0 run now)") != std::string::npos, again.out);
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

BOOST_AUTO_TEST_CASE(a_batch_larger_than_the_training_set_is_refused_before_any_branch) {
  // 8192 examples less 1024 for validation: 7168; k = 1024 asks for 8192.
  const auto r = run_lbt("cbs --from " + reference().string() +
                         " --at-steps 5 --multipliers 1,2,1024 --out " +
                         (scratch() / "bad_k").string());
  BOOST_TEST(r.code == 2);
  const auto errors = lines_starting(r.err, "error:");
  BOOST_TEST_REQUIRE(errors.size() == 1u, r.err);
  BOOST_TEST(errors[0].find("larger than the training set (7168") != std::string::npos, r.err);
  BOOST_TEST(lines_starting(r.err, "hint:").size() == 1u, r.err);
  BOOST_TEST(!fs::exists(scratch() / "bad_k"));
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
