// The sweep's adaptive arm (sweep.adaptive; experiments/sweep/sweep_adaptive.hpp) end to end
// through the real `lbt` binary on synthetic regression: one adaptive trial per seed beside the
// fixed ones, kept out of sweep.csv and the fit; adaptive.json's numbers recomputed here from the
// trials' own logs and fit.json; and a sweep killed with SIGKILL inside an adaptive trial, then
// rerun, whose adaptive trials equal an undisturbed sweep's bit for bit.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "experiments/sweep/sweep_results.hpp"
#include "support/cli_runner.hpp"
#include "support/processes.hpp"
#include "support/run_files.hpp"

namespace fs = std::filesystem;
using lbt::experiments::read_csv;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

BOOST_AUTO_TEST_SUITE(sweep_adaptive)

namespace {

// fit.json needs three reached batch sizes; the adaptive trials run from 8 to 512 with
// micro-batch 4, evaluations every 64 / 8 = 8 steps, noise every step.
fs::path write_config(const std::string& name, const std::string& target, int max_steps) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << "[model]\nspec = \"linear:16-1\"\ninit = \"zero\"\n"
                   << "[data]\ndataset = \"synthetic-regression\"\nvalidation_size = 1024\n"
                   << "[data.synthetic]\nexamples = 4096\ndim = 16\nnoise = 0.5\n"
                   << "[train]\ntarget = \"" << target << "\"\nlog_every = 50\n"
                   << "[optimizer]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.0\n"
                   << "[schedule]\nscaling = \"sqrt\"\nreference_batch = 32\n"
                   << "[noise]\nenabled = true\nevery = 1\nestimator = \"per_example\"\n"
                   << "ema = 0.9\nwindow_steps = 10\n"
                   << "[sweep]\nbatch_sizes = [8, 32, 128, 512]\nseeds = 2\n"
                   << "lr_multipliers = [1.0]\nmax_steps = " << max_steps
                   << "\neval_every_examples = 64\nlr_search = \"grid\"\nadaptive = true\n";
  return p;
}

nlohmann::json json_of(const fs::path& p) {
  return nlohmann::json::parse(slurp(p));
}

}  // namespace

BOOST_AUTO_TEST_CASE(adaptive_trials_run_beside_the_fixed_ones_and_adaptive_json_is_theirs) {
  const fs::path cfg = write_config("adaptive.toml", "val_loss<=0.14", 600);
  const fs::path dir = scratch() / "adaptive_sweep";
  const auto r =
      run_lbt("sweep --config " + cfg.string() + " --jobs 2 --no-plots --out " + dir.string());
  BOOST_TEST_INFO("stderr: " << r.err);
  BOOST_REQUIRE_EQUAL(r.code, 0);
  BOOST_TEST(r.out.find("adaptive (2/2 seeds reached the target") != std::string::npos, r.out);
  const auto sweep = read_csv(dir / "sweep.csv");
  for (const auto& row : sweep.rows) BOOST_TEST(row[0].rfind("adaptive", 0) != 0);
  const auto a = json_of(dir / "adaptive.json");
  const auto fit = json_of(dir / "fit.json");
  BOOST_REQUIRE_EQUAL(a["seeds"].size(), 2u);
  std::vector<double> steps, examples;
  for (const auto& s : a["seeds"]) {
    const fs::path run = dir / "trials" / s["trial"].get<std::string>();
    const auto summary = json_of(run / "summary.json");
    BOOST_REQUIRE(s["status"] == "reached_target");
    BOOST_TEST(s["steps_to_target"] == summary["steps_to_target"]);
    // The examples to the target are the sum of the batches metrics.jsonl logged up to it.
    double sum = 0;
    std::ifstream in(run / "metrics.jsonl");
    for (std::string line; std::getline(in, line);) {
      const auto m = nlohmann::json::parse(line);
      if (m["step"] <= s["steps_to_target"]) sum += m["global_batch"].get<double>();
    }
    BOOST_TEST(s["examples_to_target"].get<double>() == sum);
    BOOST_TEST(s["steps_bracket"][1].get<double>() - s["steps_bracket"][0].get<double>() == 8.0);
    const double gamma = s["gamma_predicted"].get<double>();
    BOOST_TEST((0 < gamma && gamma <= 1.0));
    steps.push_back(s["steps_to_target"]);
    examples.push_back(s["examples_to_target"]);
  }
  BOOST_TEST(a["steps_to_target"]["median"].get<double>() == (steps[0] + steps[1]) / 2);
  // The product at the medians against the fit, by hand; or null with its reason.
  const double S = (steps[0] + steps[1]) / 2, E = (examples[0] + examples[1]) / 2;
  const double S_min = fit["S_min"], E_min = fit["E_min"];
  const auto& p = a["measured_product"];
  if (S > S_min && E > E_min) {
    BOOST_TEST(p["value"].get<double>() == (S / S_min - 1) * (E / E_min - 1),
               boost::test_tools::tolerance(1e-12));
    BOOST_TEST(p["lo"].get<double>() >= 0.0);
    BOOST_TEST(p["lo"].get<double>() <= p["value"].get<double>());
  } else {
    BOOST_TEST(p["value"].is_null());
    BOOST_TEST(p["why"].is_string());
  }
}

// SIGKILL while adaptive_0 runs (an unreachable target: every trial runs its budget), rerun:
// every adaptive trial equals the undisturbed sweep's, line for line.
BOOST_AUTO_TEST_CASE(a_sweep_killed_inside_an_adaptive_trial_resumes_it_bit_for_bit) {
  const fs::path cfg = write_config("slow.toml", "val_loss<=0.1", 3000);
  const fs::path calm = scratch() / "adaptive_calm", killed = scratch() / "adaptive_killed";
  auto r =
      run_lbt("sweep --config " + cfg.string() + " --jobs 2 --no-plots --out " + calm.string() +
              " --set sweep.seeds=1 --set sweep.batch_sizes=[64,512] --set sweep.max_steps=0 --set "
              "sweep.max_examples=4000000"
              " --set train.checkpoint_every=40");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const std::string log = (scratch() / "adaptive_killed.log").string();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1), dup2(fd, 2);
    execl(LBT_BINARY, LBT_BINARY, "sweep", "--config", cfg.c_str(), "--jobs", "1", "--out",
          killed.c_str(), "--no-plots", "--set", "sweep.seeds=1", "--set",
          "sweep.batch_sizes=[64,512]", "--set", "sweep.max_steps=0", "--set",
          "sweep.max_examples=4000000", "--set", "train.checkpoint_every=40",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  // The first checkpoint (step 40 of about 8000) of adaptive_0, the last trial to start.
  const fs::path metrics = killed / "trials" / "adaptive_0" / "metrics.jsonl";
  const fs::path checkpoints = killed / "trials" / "adaptive_0" / "checkpoints";
  lbt::test::wait_until([&] { return fs::exists(checkpoints) && !fs::is_empty(checkpoints); }, 90,
                        std::chrono::microseconds(200));
  kill(-pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  BOOST_REQUIRE_MESSAGE(fs::exists(metrics), "adaptive_0 never started; log: " << slurp(log));
  // Killed mid-run: no final summary (a "running" one may be there).
  const fs::path summary = killed / "trials" / "adaptive_0" / "summary.json";
  const std::string at_kill = fs::exists(summary) ? json_of(summary).value("status", "") : "";
  BOOST_TEST(!lbt::experiments::is_final_status(at_kill), "status at the kill: " << at_kill);
  r = run_lbt("sweep --config " + cfg.string() + " --jobs 2 --no-plots --out " + killed.string() +
              " --set sweep.seeds=1 --set sweep.batch_sizes=[64,512] --set sweep.max_steps=0 --set "
              "sweep.max_examples=4000000" +
              " --set train.checkpoint_every=40");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(lbt::test::compare_trials(calm / "trials" / "adaptive_0",
                                       killed / "trials" / "adaptive_0") == "");
  const auto x = lbt::test::read_jsonl(calm / "trials" / "adaptive_0" / "metrics.jsonl");
  const auto y = lbt::test::read_jsonl(killed / "trials" / "adaptive_0" / "metrics.jsonl");
  BOOST_REQUIRE_EQUAL(x.size(), y.size());
  int changes = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    BOOST_TEST(x[i]["global_batch"] == y[i]["global_batch"], "line " << i + 1);
    changes += i > 0 && x[i]["global_batch"] != x[i - 1]["global_batch"];
  }
  BOOST_TEST(changes >= 1);
  // Fewer than three batch sizes reached: no fit, so the product is null with a reason.
  const auto a = json_of(killed / "adaptive.json");
  BOOST_TEST(a["measured_product"]["value"].is_null());
  BOOST_TEST(a["measured_product"]["why"].is_string());
}

BOOST_AUTO_TEST_SUITE_END()
