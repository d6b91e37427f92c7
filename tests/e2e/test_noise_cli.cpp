// `lbt noise` end to end on the image presets with their default noise settings: the simple CNN
// (per-example norms of Conv2d and Linear layers) and ResNet-8 (BatchNorm couples examples, so
// lbt noise splits the batch into micro-batches for the two-batch form), a few steps each on a
// slice of Fashion-MNIST (ResNet-8's CIFAR-10 is not shipped; its preset runs on 1x28x28).
// Checks what the run writes: the method named with its reason, and every B_simple finite with
// an interval around it, or null with resolved = false; no lower end below 0.
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "e2e/regression_files.hpp"
#include "support/cli_runner.hpp"
#include "support/processes.hpp"

namespace fs = std::filesystem;
using lbt::test::run_lbt;
using lbt::test::scratch;

namespace {

const std::string kConfigs = std::string(LBT_SOURCE_DIR) + "/experiments/configs/";
// Few steps, measured every other step, on a slice of the data.
const std::string kShort =
    " --set data.train_limit=4000 --set data.validation_size=500 --set train.eval_every=1000"
    " --set train.eval_batch=500 --set noise.every=2 --set noise.window_steps=10"
    " --quiet --no-plot --overwrite";

std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// Every estimator line: B_simple finite inside its interval, or null and not resolved; the lower
// end (when there is one) >= 0. Returns how many lines had a finite B_simple.
int check_estimator_lines(const std::vector<nlohmann::json>& lines, const std::string& estimator) {
  int finite = 0, seen = 0;
  for (const auto& j : lines) {
    if (!j.contains("estimator") || j["estimator"] != estimator) continue;
    ++seen;
    BOOST_TEST_CONTEXT("step " << j["step"]) {
      for (const char* key : {"b_simple_ci95", "b_simple_ema_ci95"}) {
        const auto& lo = j[key][0];
        if (lo.is_number()) BOOST_TEST(lo.get<double>() >= 0.0);
      }
      if (j["b_simple"].is_number()) {
        const double b = j["b_simple"].get<double>();
        BOOST_TEST(std::isfinite(b));
        BOOST_TEST(j["resolved"].get<bool>());
        BOOST_TEST(j["b_simple_ci95"][0].get<double>() <= b);
        BOOST_TEST(j["b_simple_ci95"][1].get<double>() >= b);
        ++finite;
      } else {
        BOOST_TEST(j["b_simple"].is_null());
        BOOST_TEST(!j["resolved"].get<bool>());
      }
    }
  }
  BOOST_TEST(seen >= 5);
  return finite;
}

}  // namespace

BOOST_AUTO_TEST_CASE(simple_cnn_preset_runs_per_example_on_conv_layers_with_b_noise) {
  const fs::path out = scratch() / "cnn";
  const auto r = run_lbt("noise --config " + kConfigs + "fmnist_cnn.toml --steps 20 --at-steps 10" +
                         " --set noise.hessian.small_batches=4 --set noise.hessian.examples=256" +
                         kShort + " --out " + out.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.out.find("Method: per_example") != std::string::npos, r.out);
  // Once, in the report: stderr's "noise: method" line repeated it before the run.
  BOOST_TEST(r.err.find("noise: method") == std::string::npos, r.err);
  const auto lines = read_jsonl(out / "noise.jsonl");
  BOOST_REQUIRE(!lines.empty());
  BOOST_TEST(lines[0]["method"] == "per_example");
  BOOST_TEST(lines[0]["reason"].get<std::string>().find("Conv2d") != std::string::npos);
  const int finite = check_estimator_lines(lines, "per_example");
  BOOST_TEST_MESSAGE("cnn: " << finite << " per_example lines with a finite B_simple");
  bool hessian = false;
  for (const auto& j : lines)
    hessian = hessian || (j.contains("estimator") && j["estimator"] == "hessian");
  BOOST_TEST(hessian);
}

BOOST_AUTO_TEST_CASE(resnet_preset_falls_back_to_two_batch_over_micro_batches_and_says_why) {
  const fs::path out = scratch() / "resnet";
  const auto r = run_lbt("noise --config " + kConfigs + "cifar10_resnet8.toml --steps 20" +
                         " --set data.dataset=\\\"fashion-mnist\\\"" +
                         " --set data.path=\\\"/usr/share/datasets/fashion-mnist\\\"" +
                         " --set noise.hessian.enabled=false" + kShort + " --out " + out.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.out.find("Method: two_batch") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("BatchNorm") != std::string::npos, r.out);  // the method's reason
  const auto lines = read_jsonl(out / "noise.jsonl");
  BOOST_REQUIRE(!lines.empty());
  BOOST_TEST(lines[0]["method"] == "two_batch");
  BOOST_TEST(lines[0]["reason"].get<std::string>().find("BatchNorm") != std::string::npos);
  BOOST_TEST(lines[0]["layout"].get<std::string>().find("4 micro-batches of 32") !=
             std::string::npos);
  check_estimator_lines(lines, "two_batch");
}

BOOST_AUTO_TEST_CASE(per_example_on_a_batch_norm_model_is_refused_before_training) {
  const fs::path out = scratch() / "refused";
  const auto r = run_lbt(
      "train --config " + kConfigs + "cifar10_resnet8.toml" +
      " --set data.dataset=\\\"fashion-mnist\\\"" +
      " --set data.path=\\\"/usr/share/datasets/fashion-mnist\\\"" +
      " --set noise.enabled=true --set noise.estimator=\\\"per_example\\\"" +
      " --set data.train_limit=2000 --set data.validation_size=500 --quiet --out " + out.string());
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("noise.estimator = \"per_example\"") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("hint:") != std::string::npos, r.err);
  BOOST_TEST(!fs::exists(out / "summary.json"));
}

// lbt noise with its estimator turned off printed B_simple "0 [0, 0]" over "the last 0 steps"
// (exit 0): refused before training, at --check too.
BOOST_AUTO_TEST_CASE(noise_with_the_estimator_off_is_refused_before_training) {
  const fs::path out = scratch() / "estimator_off";
  for (const char* check : {" --check", ""}) {
    const auto r = run_lbt("noise --config " + kConfigs + "synthetic_regression.toml" +
                           " --steps 10 --set noise.enabled=false --out " + out.string() + check);
    BOOST_TEST(r.code == 2, r.err);
    BOOST_TEST(r.err.find("noise.enabled = false turns its estimator off") != std::string::npos,
               r.err);
    BOOST_TEST(!fs::exists(out / "summary.json"));
  }
}

// A global batch of 1 has no spread of the gradient to read: lbt noise trained on and printed
// "B_simple ~ 0 [0, 0]" for what it never measured (2026-11-29 audit); refused before training.
BOOST_AUTO_TEST_CASE(noise_at_a_global_batch_of_1_is_refused_before_training) {
  const fs::path out = scratch() / "batch_of_one";
  for (const char* check : {" --check", ""}) {
    const auto r = run_lbt("noise --config " + kConfigs + "synthetic_regression.toml" +
                           " --steps 10 --set train.global_batch=1 --set train.micro_batch=1"
                           " --out " +
                           out.string() + check);
    BOOST_TEST(r.code == 2, r.err);
    BOOST_TEST(r.err.find("lbt noise at a global batch of 1 measures nothing") != std::string::npos,
               r.err);
    BOOST_TEST(!fs::exists(out / "summary.json"));
  }
}

BOOST_AUTO_TEST_CASE(layouts_that_cannot_give_two_batch_sizes_are_refused_before_training) {
  // one process, accum_steps = 1: only the global batch, so no small one for two_batch;
  // and a BatchNorm model whose per-example norms are not exact, in lbt train (which keeps the
  // config's layout; lbt noise would split it)
  struct Case {
    std::string config, sets, message;
  };
  const std::string fmnist =
      " --set data.dataset=\\\"fashion-mnist\\\"" +
      std::string(" --set data.path=\\\"/usr/share/datasets/fashion-mnist\\\"");
  for (const Case& c : {Case{"fmnist_mlp.toml", " --set noise.estimator=\\\"two_batch\\\"",
                             "needs two batch sizes"},
                        Case{"cifar10_resnet8.toml", fmnist, "no estimator can run"}}) {
    BOOST_TEST_CONTEXT(c.config) {
      const fs::path out = scratch() / ("layout_" + c.config);
      const auto r = run_lbt("train --config " + kConfigs + c.config + c.sets +
                             " --set noise.enabled=true --set train.global_batch=64" +
                             " --set data.train_limit=2000 --set data.validation_size=500" +
                             " --quiet --out " + out.string());
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.err.find(c.message) != std::string::npos, r.err);
      BOOST_TEST(r.err.find("train.accum_steps >= 2") != std::string::npos, r.err);
      BOOST_TEST(!fs::exists(out / "summary.json"));
    }
  }
}

// The recommendation takes the Hessian probe's B_noise (McCandlish et al.'s estimate of the
// critical batch) where a probe near the run's end resolved it, quoting noise.jsonl's value and
// interval, with B_simple beside it; a probe before the last noise.window_steps (100) of a run
// is not quoted as the run's. The probe's own B_simple carries an interval (never a bare or
// negative number).
BOOST_AUTO_TEST_CASE(the_recommendation_quotes_a_resolved_b_noise_from_the_runs_end) {
  const std::string synthetic = "noise --config " + kConfigs + "synthetic_regression.toml" +
                                " --quiet --no-plot --overwrite --out ";
  const fs::path out = scratch() / "b_noise_at_end";
  const auto r = run_lbt(synthetic + out.string() + " --steps 100 --at-steps 99");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  nlohmann::json probe;
  for (const auto& j : read_jsonl(out / "noise.jsonl"))
    if (j.contains("estimator") && j["estimator"] == "hessian") probe = j;
  BOOST_REQUIRE(probe.is_object());
  BOOST_REQUIRE(probe["resolved"].get<bool>());
  const auto text = [](const nlohmann::json& v) {  // whole from 100, 3 digits below
    char buf[32];
    std::snprintf(buf, sizeof buf, v.get<double>() >= 100 ? "%.0f" : "%.3g", v.get<double>());
    return std::string(buf);
  };
  const std::string quoted = "measured by the Hessian probe at step 99: " + text(probe["b_noise"]) +
                             " [" + text(probe["b_noise_ci95"][0]) + ", " +
                             text(probe["b_noise_ci95"][1]) + "]";
  BOOST_TEST(r.out.find(quoted) != std::string::npos, r.out);
  const auto& same = probe["b_simple_same_batches_ci95"];
  BOOST_TEST(same[0].get<double>() >= 0.0);
  BOOST_TEST(same[0].get<double>() <= probe["b_simple_same_batches"].get<double>());
  BOOST_TEST(probe["b_simple_same_batches"].get<double>() <= same[1].get<double>());
  // Its numerator and denominator carry intervals around them, symmetric (t over the jackknife).
  for (const char* key : {"gHg", "tr_H_sigma"}) {
    const auto& ci = probe[std::string(key) + "_ci95"];
    const double v = probe[key].get<double>(), lo = ci[0].get<double>(), hi = ci[1].get<double>();
    BOOST_TEST((lo < v && v < hi), key);
    BOOST_TEST(v - lo == hi - v, boost::test_tools::tolerance(1e-9 * std::abs(v)));
  }

  const fs::path early = scratch() / "b_noise_at_start";
  const auto e = run_lbt(synthetic + early.string() + " --steps 300 --at-steps 0");
  BOOST_REQUIRE_MESSAGE(e.code == 0, e.err);
  BOOST_TEST(e.out.find("Recommendation:") != std::string::npos, e.out);
  BOOST_TEST(e.out.find("Hessian probe") == std::string::npos, e.out);
}

// --at-steps past the run's end: the report says so (the rows showed "measured 39" under
// "at_step 500" and a B_noise of "-" with no word why); steps within the run get no note.
BOOST_AUTO_TEST_CASE(at_steps_past_the_run_are_said_to_be) {
  const std::string run = "noise --config " + kConfigs + "synthetic_regression.toml --steps 40" +
                          " --quiet --no-plot --overwrite --out " + (scratch() / "past").string();
  const auto past = run_lbt(run + " --at-steps 20,500,900");
  BOOST_TEST(past.code == 0, past.err);
  BOOST_TEST(past.out.find("Note: past the run's last step (39), --at-steps 500, 900 report the "
                           "last measurement before it, and no B_noise probe ran there") !=
                 std::string::npos,
             past.out);
  const auto within = run_lbt(run + " --at-steps 39,20,39");
  BOOST_TEST(within.code == 0, within.err);
  BOOST_TEST(within.out.find("Note: past") == std::string::npos, within.out);
  // A step given twice is one set of rows, steps in order.
  const auto rows_at = [&](const std::string& step) {
    std::size_t n = 0;
    for (std::size_t at = within.out.find("\n" + step); at != std::string::npos;
         at = within.out.find("\n" + step, at + 1))
      ++n;
    return n;
  };
  const std::string at20 = "      20 ", at39 = "      39 ";
  BOOST_TEST(rows_at(at39) == rows_at(at20), within.out);
  BOOST_TEST(within.out.find("\n" + at20) < within.out.find("\n" + at39), within.out);
}

// A B_simple whose interval spans more than 10x sizes no batch: 12 steps read ~ 49 [0, 4718]
// and recommended "global batches up to about 49" (2026-11-29 audit); now none yet, and why.
BOOST_AUTO_TEST_CASE(a_recommendation_needs_an_interval_narrower_than_10x) {
  const auto r = run_lbt("noise --config " + kConfigs +
                         "synthetic_regression.toml --quiet --no-plot --overwrite --steps 12"
                         " --out " +
                         (scratch() / "wide").string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.out.find("Recommendation: none yet.") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("too wide (over 10x)") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("should cut steps") == std::string::npos, r.out);
}

// Every example the same: no gradient noise, and the Hessian probe reads B_noise ~ 5e-15. The
// recommendation said "global batches up to about 0 should cut steps" and "0 [0, 0]" (2026-11-29
// audit): a critical batch below 1 says a batch of 1 is enough.
BOOST_AUTO_TEST_CASE(a_critical_batch_below_one_recommends_no_batch_up_to_0) {
  const fs::path dir = scratch() / "same_examples";
  fs::create_directories(dir);
  std::vector<double> x, y(600, 1.5);
  for (int i = 0; i < 600; ++i)
    for (int j = 0; j < 8; ++j) x.push_back(0.25 * j - 1.0);
  lbt::test::write_npy(dir / "x.npy", "<f4", {600, 8}, x);
  lbt::test::write_npy(dir / "y.npy", "<f4", {600}, y);
  std::ofstream(dir / "same.toml")
      << "[model]\nspec = \"linear:8-1\"\ninit = \"zero\"\n[data]\ndataset = \"same\"\n"
         "format = \"npy\"\ntrain_features = \""
      << (dir / "x.npy").string() << "\"\ntrain_labels = \"" << (dir / "y.npy").string()
      << "\"\nvalidation_size = 88\nnormalize = false\n[train]\nglobal_batch = 128\n"
         "micro_batch = 16\nsteps = 60\neval_every = 30\n[optimizer]\nname = \"sgd\"\n"
         "lr = 0.01\nmomentum = 0.0\n[noise]\nenabled = true\nevery = 5\n";
  const auto r =
      run_lbt("noise --config " + (dir / "same.toml").string() +
              " --quiet --no-plot --overwrite --at-steps 0,30 --out " + (dir / "run").string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.out.find("so a batch of 1 already needs about as few steps") != std::string::npos,
             r.out);
  BOOST_TEST(r.out.find("up to about 0") == std::string::npos, r.out);
}

// Ctrl-C killed lbt noise with no checkpoint, its summary.json "running" for ever (2026-11-30):
// it stops as lbt train does, and --resume finishes the same noise.jsonl and table as one run.
BOOST_AUTO_TEST_CASE(an_interrupted_noise_run_resumes_to_the_same_measurements) {
  const std::string args = "noise --config " + kConfigs +
                           "synthetic_regression.toml --quiet --no-plot --steps 40000"
                           " --at-steps 100,39000 --out ";
  const fs::path run = scratch() / "noise_stopped", whole = scratch() / "noise_whole";
  fs::remove_all(run);
  fs::remove_all(whole);
  const pid_t pid = lbt::test::start_lbt(args + run.string(), scratch() / "noise_stopped.log");
  BOOST_REQUIRE(lbt::test::wait_until(
      [&] { return fs::exists(run / "metrics.jsonl") && fs::file_size(run / "metrics.jsonl"); },
      60));
  // Its lock names it (it read "lbt train", and a second command was told so).
  BOOST_TEST(lbt::test::slurp(run / "run.lock").find("lbt noise") != std::string::npos);
  kill(pid, SIGINT);
  const int status = lbt::test::wait_for(pid, 60);
  BOOST_TEST((WIFEXITED(status) && WEXITSTATUS(status) == 130), status);
  const std::string log = lbt::test::slurp(scratch() / "noise_stopped.log");
  BOOST_TEST(
      log.find("lbt noise --resume " + run.string() + " --at-steps 100,39000") != std::string::npos,
      log);
  const auto resumed =
      run_lbt("noise --quiet --no-plot --resume " + run.string() + " --at-steps 100,39000");
  BOOST_REQUIRE_MESSAGE(resumed.code == 0, resumed.err);
  const auto once = run_lbt(args + whole.string());
  BOOST_REQUIRE_MESSAGE(once.code == 0, once.err);
  BOOST_TEST(read_jsonl(run / "noise.jsonl") == read_jsonl(whole / "noise.jsonl"));
  const auto table = [](std::string out) { return out.substr(0, out.find("run directory:")); };
  BOOST_TEST(table(resumed.out) == table(once.out));
}
