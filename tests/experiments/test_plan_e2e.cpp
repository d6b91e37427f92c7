// lbt plan through the real `lbt` binary on a tiny sweep of synthetic linear regression: the
// plan's run, its schedule, and what it says past the batches swept.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli_runner.hpp"
#include "sweep_fixtures.hpp"

namespace fs = std::filesystem;
using lbt::test::run_lbt;
using Result = lbt::test::CliResult;
using lbt::test::scratch;
using lbt::test::slurp;

using namespace lbt::test::sweep_e2e;

// lbt plan's run is a trial's length at its batch, so a schedule that decays to the end of the
// run decays as the trials' did (a run of 1.5 x the predicted steps decayed faster, 2026-11-29
// audit); a --max-steps that cuts it shorter says the schedule is no longer the trials'.
BOOST_AUTO_TEST_CASE(a_plan_keeps_the_trials_schedule_and_says_when_max_steps_cuts_it) {
  const fs::path cfg = write_config("cosine.toml", "val_loss<=0.14", 600);
  const fs::path dir = scratch() / "cosine";
  Result r = run_lbt("sweep --config " + cfg.string() + " --jobs 2 --no-plots --quiet --out " +
                     dir.string() + " --set schedule.decay=cosine");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  r = run_lbt("plan --from " + dir.string() + " --workers 1 --micro-batch 32");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  auto plan = nlohmann::json::parse(slurp(dir / "plan.json"));
  BOOST_TEST(plan["train_steps"] == 600);  // sweep.max_steps: each trial's budget
  BOOST_TEST(plan["schedule"]["decay"] == "cosine");
  BOOST_TEST(!plan.contains("schedule_warning"));
  BOOST_TEST(!plan.contains("extrapolation_warning"));  // 32 lies among the swept 8..512
  // Past the largest batch swept the prediction extends the curve, and says so (2026-11-30).
  r = run_lbt("plan --from " + dir.string() + " --workers 32 --micro-batch 64");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.out.find("warning: global batch 2048 lies above the largest batch swept, 512") !=
                 std::string::npos,
             r.out);
  // A plan for 32 workers says to run it on 32 (it said "lbt train --config" alone).
  BOOST_TEST(r.out.find("(mpirun -np 32 lbt train --config it as is)") != std::string::npos, r.out);
  BOOST_TEST(slurp(dir / "plan.toml").find("# Run it as is: mpirun -np 32 lbt train --config") !=
             std::string::npos);
  r = run_lbt("plan --from " + dir.string() + " --max-steps 100");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  plan = nlohmann::json::parse(slurp(dir / "plan.json"));
  BOOST_TEST(plan["train_steps"] == 100);
  BOOST_TEST(
      r.out.find("warning: the run's 100 steps (--max-steps) are fewer than a trial's 600") !=
          std::string::npos,
      r.out);
}
