// End to end through the real `lbt` binary: a short Fashion-MNIST run whose loss falls and
// whose run directory parses, divergence, the CLI's error messages for bad input, and --help
// against every preset key (lbt schedule's checks: test_e2e_schedules.cpp).
#include <boost/test/unit_test.hpp>

#include <sched.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include <toml++/toml.h>

#include "e2e_support.hpp"

using namespace lbt::test::e2e;

BOOST_AUTO_TEST_CASE(short_fashion_mnist_run_learns_and_writes_a_parseable_run_directory) {
  const fs::path run = scratch() / "run";
  Result r = run_lbt("train --config " + kConfig + kSmall + " --out " + run.string());
  BOOST_TEST_INFO("stderr: " << r.err);
  BOOST_REQUIRE_EQUAL(r.code, 0);
  BOOST_TEST(r.out.find("run directory: " + run.string()) != std::string::npos);

  auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_TEST(summary["steps"].get<int>() == 120);
  BOOST_TEST(summary["global_batch"].get<int>() == 128);
  const std::string status = summary["status"];
  BOOST_TEST((status == "reached_target" || status == "budget_exhausted"));
  BOOST_TEST(summary["best_val_accuracy"].get<double>() > 0.70);  // chance is 0.10

  auto metrics = read_jsonl(run / "metrics.jsonl");
  BOOST_REQUIRE_EQUAL(metrics.size(), 12u);
  for (const char* key :
       {"step", "epoch", "lr", "loss", "grad_norm", "samples_per_s", "wall_time"}) {
    BOOST_TEST(metrics.front().contains(key), key);
  }
  BOOST_TEST(metrics.back()["loss"].get<double>() < 0.6 * metrics.front()["loss"].get<double>());
  // The run's samples/s has its spread: the metrics windows' median [min, max].
  std::vector<double> rates;
  for (const auto& m : metrics) rates.push_back(m["samples_per_s"].get<double>());
  std::sort(rates.begin(), rates.end());
  const auto& windows = summary["samples_per_s_windows"];
  BOOST_TEST(windows["windows"].get<int>() == 12);
  BOOST_TEST((windows["min"] == rates.front() && windows["max"] == rates.back()));
  BOOST_TEST(windows["median"].get<double>() == 0.5 * (rates[5] + rates[6]));
  BOOST_TEST(r.out.find("per 10-step window median ") != std::string::npos);
  auto evals = read_jsonl(run / "eval.jsonl");
  BOOST_REQUIRE_EQUAL(evals.size(), 3u);
  BOOST_TEST(evals.back()["step"].get<int>() == 120);

  // The resolved config is complete TOML: it holds the overrides and every default.
  const std::string config = slurp(run / "config.toml");
  BOOST_TEST(config.find("spec = 'mlp:784-64-10'") != std::string::npos);
  BOOST_TEST(config.find("divergence_factor") != std::string::npos);

  // A second run into the same directory is refused rather than clobbering the first.
  Result again = run_lbt("train --config " + kConfig + kSmall + " --out " + run.string());
  BOOST_TEST(again.code != 0);
  BOOST_TEST(again.err.find("already holds a run") != std::string::npos);
}

// train.threads = 0 runs a thread per core the process may use: pinned to one core (taskset),
// one thread, not one per core of the machine crowded onto that core (summary.json's threads);
// unpinned, every core this test may use.
BOOST_AUTO_TEST_CASE(default_threads_follow_the_cores_the_process_may_use) {
  cpu_set_t set;
  CPU_ZERO(&set);
  BOOST_REQUIRE(sched_getaffinity(0, sizeof set, &set) == 0);
  const int cores = CPU_COUNT(&set);
  int first = 0;
  while (!CPU_ISSET(first, &set)) ++first;
  const std::string args = "train --config " + kConfig + kSmall + " --set train.steps=5 --out ";
  for (const bool pinned : {true, false}) {
    const fs::path run = scratch() / (pinned ? "pinned" : "unpinned");
    const std::string launcher = std::string("env -u SLURM_CPUS_PER_TASK ") +
                                 (pinned ? "taskset -c " + std::to_string(first) + " " : "");
    const Result r = run_lbt(args + run.string(), launcher);
    BOOST_TEST_INFO("stderr: " << r.err);
    BOOST_REQUIRE_EQUAL(r.code, 0);
    const auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
    BOOST_TEST(summary["threads"].get<int>() == (pinned ? 1 : cores));
  }
}

BOOST_AUTO_TEST_CASE(huge_learning_rate_ends_as_diverged_not_as_a_crash) {
  const fs::path run = scratch() / "diverged";
  Result r = run_lbt("train --config " + kConfig + kSmall + " --set optimizer.lr=1000 --out " +
                     run.string());
  BOOST_REQUIRE_EQUAL(r.code, 0);
  auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_TEST(summary["status"].get<std::string>() == "diverged");
  BOOST_TEST(summary["diverged_step"].get<int>() >= 0);
  BOOST_TEST(summary.contains("last_finite_loss"));
}

// Local SGD on one process is plain synchronous SGD: said on stderr (it was accepted without a
// word, and a user who forgot mpirun read the run as local SGD's).
BOOST_AUTO_TEST_CASE(local_sgd_on_one_process_says_every_step_is_synchronous) {
  const fs::path run = scratch() / "local_one";
  Result r = run_lbt("train --config " + kConfig + kSmall + " --set train.sync_every=4 --out " +
                     run.string());
  BOOST_REQUIRE_EQUAL(r.code, 0);
  BOOST_TEST(r.err.find("note: train.sync_every = 4 on one process: every step is synchronous") !=
                 std::string::npos,
             r.err);
}

// `--set sweep.max_steps=5` on lbt train read like a limit on the run and was dropped unsaid
// (2026-11-29): only lbt sweep reads sweep.* keys, which the note says; the run is unchanged.
BOOST_AUTO_TEST_CASE(a_sweep_key_set_on_lbt_train_is_a_note_that_it_changes_nothing) {
  const fs::path run = scratch() / "sweep_key_on_train";
  Result r = run_lbt("train --config " + kConfig + kSmall +
                     " --set train.steps=3 --set sweep.max_steps=1 --out " + run.string());
  BOOST_REQUIRE_EQUAL(r.code, 0);
  BOOST_TEST(r.err.find("note: --set sweep.max_steps has no effect on lbt train: only lbt sweep "
                        "reads sweep.* keys") != std::string::npos,
             r.err);
  BOOST_TEST(nlohmann::json::parse(slurp(run / "summary.json"))["steps"].get<int>() == 3);
}

// An LR warmed up to 1.28 (linear scaling from batch 1) meets val_accuracy >= 0.78 on the EMA at
// step 53, then diverges (step 136 on the AVX2 path, 125 on AVX-512: where a run at the edge of
// stability blows up depends on the kernels' round-off, so the test asks for after 2 x 53). Run on,
// the run reached its target: that is its status, the divergence recorded beside it (until
// 2026-11-29 it read "diverged", and a sweep dropped the seed). With stop_at_target it waits for
// the raw reading (never met) exactly to 2 x 53 steps, not to the first evaluation past that (and
// so it does not reach the divergence).
BOOST_AUTO_TEST_CASE(a_run_that_diverges_after_its_target_reached_it) {
  const fs::path cfg = scratch() / "late_divergence.toml";
  std::ofstream(cfg)
      << "[model]\nspec = \"mlp:784-64-10\"\ninit = \"he\"\n[data]\ndataset = \"fashion-mnist\"\n"
         "path = \"/usr/share/datasets/fashion-mnist\"\nvalidation_size = 5000\n"
         "train_limit = 20000\n[train]\ntarget = \"val_accuracy>=0.78\"\nseed = 0\n"
         "global_batch = 128\nsteps = 600\nthreads = 1\neval_every = 1\neval_growth = 1.5\n"
         "divergence_factor = 1.0\n"
         "[optimizer]\nname = \"sgd\"\nlr = 0.01\nmomentum = 0.9\n[schedule]\n"
         "scaling = \"linear\"\nreference_batch = 1\nwarmup = 2.8\nwarmup_unit = \"epochs\"\n"
         "warmup_from_base_lr = true\n";
  const fs::path run = scratch() / "late_divergence", waited = scratch() / "late_divergence_wait";
  Result r = run_lbt("train --config " + cfg.string() + " --out " + run.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_TEST(summary["status"] == "reached_target");
  BOOST_TEST(summary["steps_to_target"] == 53);
  const int diverged = summary["diverged_step"].get<int>();
  BOOST_TEST(diverged > 2 * 53);
  BOOST_TEST(summary["steps"] == diverged);
  BOOST_TEST(r.out.find("diverged at step " + std::to_string(diverged) + ", after the target") !=
                 std::string::npos,
             r.out);
  r = run_lbt("train --config " + cfg.string() + " --set train.stop_at_target=true --out " +
              waited.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  summary = nlohmann::json::parse(slurp(waited / "summary.json"));
  BOOST_TEST(summary["readings"]["first_passage"]["steps_hi"].is_null());
  BOOST_TEST(summary["steps"] == 2 * 53);
  BOOST_TEST(!summary.contains("diverged_step"));
}

BOOST_AUTO_TEST_CASE(skip_mode_drops_spiking_updates_then_gives_up_after_the_limit) {
  // lr 1000: the first update (at a normal loss) throws the weights far out, so every later
  // loss is a spike. Skip mode drops updates 2..4 (limit 3), and at the 5th step, the 4th
  // spike in a row, the run counts as diverged.
  const fs::path run = scratch() / "skipped";
  Result r =
      run_lbt("train --config " + kConfig + kSmall +
              " --set optimizer.lr=1000 --set train.on_divergence=skip --set train.skip_limit=3"
              " --set train.divergence_factor=2 --out " +
              run.string());
  BOOST_REQUIRE_EQUAL(r.code, 0);
  BOOST_TEST(r.err.find("warning: step 2 skipped") != std::string::npos, r.err);
  auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_TEST(summary["status"].get<std::string>() == "diverged");
  BOOST_TEST(summary["skipped_steps"].get<int>() == 3);
  BOOST_TEST(summary["diverged_step"].get<int>() == 4);  // 0-based: the 5th step
  BOOST_TEST(summary["divergence_reason"].get<std::string>().find("train.skip_limit") !=
             std::string::npos);
  int skipped_lines = 0;
  std::istringstream metrics(slurp(run / "metrics.jsonl"));
  for (std::string line; std::getline(metrics, line);) {
    auto j = nlohmann::json::parse(line);
    if (j.value("skipped", false)) ++skipped_lines;
  }
  BOOST_TEST(skipped_lines == 3);
  auto bad =
      run_lbt("train --config " + kConfig + kSmall + " --set train.on_divergence=ignore --out " +
              (scratch() / "bad_mode").string());
  BOOST_TEST(bad.code != 0);
  BOOST_TEST(bad.err.find("train.on_divergence") != std::string::npos, bad.err);
}

struct BadInput {
  std::string args, must_say;
};

// Data larger than the process may hold (here 200M synthetic examples under a 3 GB address-space
// limit; a gzip whose header promises far more than it holds does the same): a data error with
// a hint, exit 3, not a bare "std::bad_alloc" with exit 1; for generated data the hint names its
// keys (it named data.train_limit and file headers, neither of which applies).
BOOST_AUTO_TEST_CASE(data_that_does_not_fit_in_memory_is_a_data_error) {
  const Result r = run_lbt("train --check --config " LBT_SOURCE_DIR
                           "/experiments/configs/synthetic_regression.toml "
                           "--set data.synthetic.examples=200000000",
                           "ulimit -v 3000000; ");
  BOOST_TEST(r.code == 3, r.err);
  BOOST_TEST(r.err.find("its 200000000 examples of 32 features do not fit in this process's "
                        "memory") != std::string::npos,
             r.err);
  BOOST_TEST(r.err.find("hint: generate fewer: lower data.synthetic.examples") != std::string::npos,
             r.err);
}

BOOST_AUTO_TEST_CASE(bad_inputs_fail_with_one_clear_message_and_no_complete_looking_run) {
  const std::string bad_key =
      write_config("typo.toml", "[optimizer]\nlearnig_rate = 0.1\n").string();
  const std::string bad_toml = write_config("syntax.toml", "[train\nsteps = 3\n").string();
  const std::string flat_csv =
      write_config("flat.csv", "label,a,b,c,d\n1,0,0,0,0\n0,1,1,1,1\n1,2,2,2,2\n").string();
  const std::vector<BadInput> cases = {
      {"--set data.path=/nonexistent", "dataset-fashion-mnist"},
      {"--set data.dataset=cifar10 --set data.path=/nonexistent", "data_batch_1.bin"},
      {"--set data.format=csv --set data.train_features=" + flat_csv +
           " --set data.validation_size=1 --set data.train_limit=0 --set model.spec=cnn:simple",
       "shape [4]"},
      {"--set data.format=npy", "data.train_features"},
      {"--set train.global_batch=0", "train.global_batch must be > 0"},
      {"--set optimizer.lr=-0.1", "optimizer.lr must be a positive"},
      {"--set train.eval_every=0", "train.eval_every must be > 0"},
      {"--set train.steps=ten", "train.steps must be an integer"},
      {"--set train.epocs=3", "did you mean 'train.epochs'"},
      {"--set model.spec=mlp:100-10", "takes 100 inputs"},
      {"--set train.target=accuracy", "train.target"},
      {"--set 'schedule.warmup=\"5 epoch\"'", "the unit in schedule.warmup_unit"},
      {"--set schedule.warmup_unit=epoch", "did you mean 'epochs'"},
      // A --set's key names no file (it read "fmnist_mlp.toml: schedule.warmup must be ...").
      {"--set schedule.warmup=-1", "error: schedule.warmup must be a finite number >= 0"},
      // At a batch above the reference batch the warmup climbs: past the run, it is an error.
      {"--set schedule.warmup=1000 --set train.global_batch=512",
       "schedule.warmup must be fewer steps than the run's 120 steps"},
      {"--set optimizer.beta1=0.8", "optimizer.beta1 is not used with optimizer.name = \"sgd\""},
      {"--set noise.enabled=true --set noise.small_batches=first", "noise.small_batches must be"},
      {"--set noise.enabled=true --set noise.window_steps=0",
       "noise.window_steps must be at least"},
      // Two measurements in the window: its "now" line needs three, and was never reported.
      {"--set noise.enabled=true --set noise.every=10 --set noise.window_steps=20",
       "noise.window_steps must be at least 3 x noise.every = 30"},
      // ... a length no step counter holds (it ran 0 steps, "completed").
      {"--set train.steps=0 --set train.epochs=1e300",
       "train.epochs = 1e+300 is past any step count"},
  };
  for (const auto& c : cases) {
    const fs::path run = scratch() / "bad";
    fs::remove_all(run);
    Result r =
        run_lbt("train --config " + kConfig + kSmall + " " + c.args + " --out " + run.string());
    BOOST_TEST_CONTEXT(c.args) {
      BOOST_TEST(r.code != 0);
      // Notes (a --set switching the data format drops data.path) may come first; then one error.
      std::string err = r.err;
      while (err.rfind("note: ", 0) == 0) err.erase(0, err.find('\n') + 1);
      BOOST_TEST(err.find("error: ") == 0u, "stderr was: " << r.err);
      BOOST_TEST(r.err.find(c.must_say) != std::string::npos, "stderr was: " << r.err);
      BOOST_TEST(r.err.find("hint: ") != std::string::npos);
      // Config and data are validated before the run directory exists.
      BOOST_TEST(!fs::exists(run / "summary.json"));
    }
  }
  Result typo = run_lbt("train --config " + bad_key + " --quiet");
  BOOST_TEST(typo.err.find("unknown config key 'optimizer.learnig_rate'") != std::string::npos);
  BOOST_TEST(typo.err.find("lbt train --help") != std::string::npos);
  Result syntax = run_lbt("train --config " + bad_toml + " --quiet");
  BOOST_TEST(syntax.code != 0);
  BOOST_TEST(syntax.err.find("syntax.toml:1") != std::string::npos, syntax.err);
  Result missing = run_lbt("train --config /nonexistent.toml");
  BOOST_TEST(missing.code != 0);
}

BOOST_AUTO_TEST_CASE(help_lists_every_option_and_config_key_with_defaults) {
  Result top = run_lbt("--help");
  BOOST_TEST(top.code == 0);
  BOOST_TEST(top.out.find("train") != std::string::npos);
  Result train = run_lbt("train --help");
  BOOST_TEST(train.code == 0);
  for (const char* s : {"--config", "--set", "--out", "[train]\n  global_batch = 128",
                        "[optimizer]\n  name = \"sgd\"", "lr = 0.05", "[optimizer.lamb]", "[noise]",
                        "[sweep]", "train_features = \"\"", "[schedule]"}) {
    BOOST_TEST(train.out.find(s) != std::string::npos, s);
  }
  // Every command's --help lists the exit codes (train's, with its config keys, had none).
  for (const char* command :
       {"train", "schedule", "sweep", "fit", "scaling", "noise", "plan", "memory", "doctor", "cbs"})
    BOOST_TEST(run_lbt(std::string(command) + " --help").out.find("  130  interrupted") !=
                   std::string::npos,
               command);
  // An empty path meant the default without a word (-o "" wrote runs/<config>-<time>).
  for (const char* empty : {"train -o ''", "sweep --out ''", "schedule --plot ''"}) {
    const Result r = run_lbt(std::string(empty) + " --config " + kConfig);
    BOOST_TEST(r.code == 2, empty);
    BOOST_TEST(r.err.find("is empty; give a path") != std::string::npos, r.err);
  }
  Result misspelt = run_lbt("trian --config x.toml");  // read "A subcommand is required"
  BOOST_TEST(misspelt.code == 2);
  BOOST_TEST(misspelt.err.find("error: 'trian' is not an lbt command") != std::string::npos,
             misspelt.err);
  BOOST_TEST(misspelt.err.find("train, schedule, sweep") != std::string::npos, misspelt.err);
}

namespace {

// "section.key" -> its value as TOML text, for every leaf of a preset.
void preset_leaves(const toml::table& table, const std::string& prefix,
                   std::vector<std::pair<std::string, std::string>>& out) {
  for (auto&& [k, v] : table) {
    const std::string key =
        prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = v.as_table()) {
      preset_leaves(*sub, key, out);
      continue;
    }
    std::ostringstream text;
    if (auto s = v.value_exact<std::string>()) {
      text << '"' << *s << '"';
    } else {
      v.visit([&](auto&& value) { text << value; });
    }
    out.emplace_back(key, text.str());
  }
}

// The section block of `help` that lists `section`'s keys.
std::string help_block(const std::string& help, const std::string& section) {
  const auto start = help.find("\n[" + section + "]\n");
  if (start == std::string::npos) return "";
  const auto end = help.find("\n\n", start + 1);
  return help.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_preset_key_is_in_help_and_accepted_by_set_in_every_command) {
  ensure_regression_data();
  const std::string help = run_lbt("train --help").out;
  int checked = 0;
  for (const auto& entry :
       fs::directory_iterator(std::string(LBT_SOURCE_DIR) + "/experiments/configs")) {
    if (entry.path().extension() != ".toml") continue;
    const std::string config = entry.path().string();
    std::vector<std::pair<std::string, std::string>> leaves;
    preset_leaves(toml::parse_file(config), "", leaves);
    // The keys a sweep sets for each trial are refused by `lbt sweep --set` (a conflict, not a
    // silent override: checked below); every other key goes to all four commands.
    const std::vector<std::string> sweep_owned = {"train.global_batch", "train.steps",
                                                  "train.epochs", "train.eval_every",
                                                  "train.stop_at_target"};
    std::string sets, sweep_sets;
    for (const auto& [key, value] : leaves) {
      const std::string section = key.substr(0, key.rfind('.'));
      const std::string leaf = key.substr(key.rfind('.') + 1);
      BOOST_TEST(help_block(help, section).find("\n  " + leaf + " = ") != std::string::npos,
                 key << " (from " << entry.path().filename().string() << ") in lbt train --help");
      // Single shell quotes around the TOML value (targets hold '>' and '<').
      sets += " --set '" + key + "=" + value + "'";
      if (std::find(sweep_owned.begin(), sweep_owned.end(), key) == sweep_owned.end()) {
        sweep_sets += " --set '" + key + "=" + value + "'";
      }
      ++checked;
    }
    BOOST_TEST_CONTEXT(entry.path().filename().string()) {
      const bool cifar = config.find("cifar10") != std::string::npos;  // no CIFAR data here
      const std::string base = " --config " + config + sets;
      // --check loads the data (the model's input shape comes from them): without CIFAR-10
      // the keys are still all accepted when it stops at the missing file (exit 3).
      Result train = run_lbt("train" + base + " --check");
      BOOST_TEST((train.code == 0 || (cifar && train.code == 3)), train.err);
      Result noise = run_lbt("noise" + base + " --check");
      BOOST_TEST((noise.code == 0 || (cifar && noise.code == 3)), noise.err);
      Result schedule = run_lbt("schedule" + base + " --steps-per-epoch 1000");
      BOOST_TEST(schedule.code == 0, schedule.err);
      if (!cifar) {
        const std::string sweep_args =
            " --batch-sizes 64 --target 'val_loss<=1' --check"
            " --set sweep.max_steps=3000";
        Result sweep = run_lbt("sweep --config " + config + sweep_sets + sweep_args);
        BOOST_TEST(sweep.code == 0, sweep.err);
        Result owned =
            run_lbt("sweep --config " + config + " --set train.global_batch=64" + sweep_args);
        BOOST_TEST(owned.code == 2);
        BOOST_TEST(owned.err.find("--batch-sizes") != std::string::npos, owned.err);
      }
    }
  }
  BOOST_TEST(checked > 100);
}
