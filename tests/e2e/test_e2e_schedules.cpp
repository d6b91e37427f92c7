// lbt schedule against the trainer, through the real `lbt` binary: the LR it prints is the one
// each preset's run logged, bit for bit; the scaling rule's columns; a warmup longer than the
// run is a note where it changes nothing.
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "e2e_support.hpp"

using namespace lbt::test::e2e;

namespace {

// lbt schedule's CSV as {step -> lr} per column, parsed with strtod (the shortest round-trip
// text reads back as the very double).
std::vector<std::map<std::int64_t, double>> read_schedule_csv(const std::string& csv) {
  std::vector<std::map<std::int64_t, double>> columns;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);
  columns.resize(static_cast<std::size_t>(std::count(line.begin(), line.end(), ',')));
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string step, value;
    std::getline(fields, step, ',');
    for (auto& column : columns) {
      std::getline(fields, value, ',');
      if (!value.empty()) column[std::stoll(step)] = std::strtod(value.c_str(), nullptr);
    }
  }
  return columns;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lbt_schedule_equals_the_lr_the_trainer_logged_bit_for_bit_for_every_preset) {
  // Each preset at two batch sizes, on a small slice of its data so that epochs are a few
  // steps (512 training examples after the 1000 held out: 8 and 2): the run length and steps
  // per epoch come from train.epochs / train.steps and the data on both sides. metrics.jsonl's
  // step N logs the LR of update N, schedule(N - 1).
  const std::string slice = " --set data.train_limit=1512 --set data.validation_size=1000";
  const std::string quiet =
      " --set train.eval_every=100000 --set train.log_every=1"
      " --set train.stop_at_target=false --set train.checkpoint_final=false"
      " --set train.divergence_factor=1e30 --quiet";
  ensure_regression_data();
  int presets = 0;
  for (const auto& entry :
       fs::directory_iterator(std::string(LBT_SOURCE_DIR) + "/experiments/configs")) {
    if (entry.path().extension() != ".toml") continue;
    const std::string config = entry.path().string();
    if (slurp(entry.path()).find("cifar10") != std::string::npos &&
        !fs::exists("cifar-10-batches-bin")) {
      BOOST_TEST_MESSAGE("skipped " << config << ": no CIFAR-10 data here");
      continue;
    }
    ++presets;
    for (int batch : {64, 256}) {
      BOOST_TEST_CONTEXT(entry.path().filename().string() << " at B=" << batch) {
        // An adaptive preset's largest batch fits the slice's 512 examples (4096 is refused).
        const bool adaptive =
            slurp(entry.path()).find("batch_schedule = \"adaptive\"") != std::string::npos;
        const std::string sets = slice + " --set train.global_batch=" + std::to_string(batch) +
                                 (adaptive ? " --set train.batch_max=512" : "");
        const fs::path run = scratch() / ("preset_" + entry.path().stem().string());
        fs::remove_all(run);
        Result train =
            run_lbt("train --config " + config + sets + quiet + " --out " + run.string());
        BOOST_REQUIRE_MESSAGE(train.code == 0, train.err);
        Result curve = run_lbt("schedule --config " + config + sets);
        BOOST_REQUIRE_MESSAGE(curve.code == 0, curve.err);
        const auto lr_at = read_schedule_csv(curve.out).at(0);
        const auto metrics = read_jsonl(run / "metrics.jsonl");
        const auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
        BOOST_TEST(lr_at.size() == summary["total_steps"].get<std::size_t>());
        BOOST_TEST(metrics.size() == summary["steps"].get<std::size_t>());
        std::size_t differ = 0;
        for (const auto& m : metrics) {
          const std::int64_t step = m["step"];
          differ += m["lr"].get<double>() != lr_at.at(step - 1);
        }
        BOOST_TEST(differ == 0u);
      }
    }
  }
  BOOST_TEST(presets >= 11);
}

BOOST_AUTO_TEST_CASE(schedule_columns_differ_by_the_scaling_rule_from_the_config_batch) {
  // fmnist_mlp.toml: global batch 128, Goyal's linear rule from reference batch 128.
  Result r =
      run_lbt("schedule --config " + kConfig +
              " --set schedule.recipe=none --set schedule.warmup=0 --set schedule.decay=constant"
              " --set schedule.scaling=linear -b 128,1024 --steps-per-epoch 10");
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto columns = read_schedule_csv(r.out);
  BOOST_REQUIRE_EQUAL(columns.size(), 2u);
  for (const auto& [step, lr] : columns[0]) BOOST_TEST(columns[1].at(step) == 8 * lr);
  Result sqrt =
      run_lbt("schedule --config " + kConfig +
              " --set schedule.recipe=none --set schedule.warmup=0 --set schedule.decay=constant"
              " --set schedule.scaling=sqrt -b 32,128 --steps-per-epoch 10");
  const auto halves = read_schedule_csv(sqrt.out);
  BOOST_TEST(halves[0].at(0) * 2 == halves[1].at(0));
}

// A warmup longer than the run refuses lbt train only where it changes the LR; lbt schedule and
// lbt noise (and its --check) show what was asked, with a note or warning (the preset's 1-epoch
// warmup at its own batch is flat at the peak: Goyal et al.'s warmup climbs from the reference
// batch's LR).
BOOST_AUTO_TEST_CASE(a_warmup_longer_than_the_run_is_a_note_where_it_changes_nothing) {
  Result plot = run_lbt("schedule --config " + kConfig + " -b 128,1024 --steps 50");
  BOOST_REQUIRE_MESSAGE(plot.code == 0, plot.err);
  BOOST_TEST(plot.err.find("note: B=128: the warmup's 390 steps outlast the run's 50 steps") !=
                 std::string::npos,
             plot.err);
  // Every batch's notes, not the first's alone: LAMB's warmup outlasts its run at 4096 only.
  Result lamb = run_lbt("schedule --config " LBT_SOURCE_DIR
                        "/experiments/configs/fmnist_mlp_lamb.toml -b 128,4096 --every 1000");
  BOOST_TEST(lamb.err.find("warning: B=4096: the warmup's 384 steps outlast the run's 180") !=
                 std::string::npos,
             lamb.err);
  const auto columns = read_schedule_csv(plot.out);
  BOOST_REQUIRE_EQUAL(columns.size(), 2u);
  BOOST_TEST(columns[0].size() == 50u);
  BOOST_TEST(columns[0].at(49) == 0.05);  // flat at optimizer.lr

  // 5,000 training examples: 1 epoch is 39 steps at B=128 (flat) and 10 at B=512 (climbs).
  const std::string slice =
      " --set data.train_limit=6000 --set data.validation_size=1000"
      " --set model.spec=mlp:784-64-10 --quiet";
  const fs::path noise_run = scratch() / "noise_short_warmup";
  Result noise =
      run_lbt("noise --config " + kConfig + slice + " --steps 30 --out " + noise_run.string());
  BOOST_TEST(noise.code == 0, noise.err);
  BOOST_TEST(
      noise.err.find("note: the warmup's 39 steps outlast the run's 30 steps") != std::string::npos,
      noise.err);
  BOOST_TEST(fs::exists(noise_run / "noise.jsonl"));
  // ... and one that climbs is shown too, by the run and by its --check alike.
  for (const std::string check : {"", " --check"}) {
    const fs::path out = scratch() / (check.empty() ? "noise_climbs" : "noise_climbs_checked");
    Result noise_climbs =
        run_lbt("noise --config " + kConfig + slice +
                " --steps 5 --set train.global_batch=512 --out " + out.string() + check);
    BOOST_TEST(noise_climbs.code == 0, check << ": " << noise_climbs.err);
    const auto warning = noise_climbs.err.find("warning: the warmup's ");
    BOOST_TEST((warning != std::string::npos &&
                noise_climbs.err.find(" steps outlast the run's 5 steps: the LR climbs", warning) !=
                    std::string::npos),
               noise_climbs.err);
  }

  Result flat = run_lbt("train --config " + kConfig + slice + " --set train.steps=30 --out " +
                        (scratch() / "flat_warmup").string());
  BOOST_TEST(flat.code == 0, flat.err);
  Result climbs = run_lbt("train --config " + kConfig + slice +
                          " --set train.steps=5 --set train.global_batch=512 --out " +
                          (scratch() / "climbing_warmup").string());
  BOOST_TEST(climbs.code == 2, climbs.err);
  BOOST_TEST(climbs.err.find("schedule.warmup must be fewer steps than the run's 5 steps") !=
                 std::string::npos,
             climbs.err);
}

// Paths lbt schedule cannot write are one error line before any output (a directory named like
// the plot or its CSV printed the CSV, then a traceback or "cannot write"); a stdout that fails
// is said within 65,536 steps, not after the last of 5M (2026-11-29 audit).
BOOST_AUTO_TEST_CASE(schedule_refuses_paths_it_cannot_write_before_printing_anything) {
  const fs::path dir = scratch() / "schedule_dirs";
  fs::create_directories(dir / "d.png");
  fs::create_directories(dir / "y.csv");
  const std::string run = "schedule --config " LBT_SOURCE_DIR
                          "/experiments/configs/synthetic_regression.toml --steps 5 --plot ";
  for (const std::string plot : {"d.png", "y.png"}) {
    const Result r = run_lbt(run + (dir / plot).string());
    BOOST_TEST(r.code == 2, r.err);
    BOOST_TEST(r.out.empty(), r.out);
    BOOST_TEST(r.err.find(" is a directory") != std::string::npos, r.err);
  }
  // A FIFO named like the plot's CSV: refused, not read (the read blocked for good).
  BOOST_REQUIRE(mkfifo((dir / "f.csv").c_str(), 0600) == 0);
  const Result fifo = run_lbt(run + (dir / "f.png").string());
  BOOST_TEST(fifo.code == 2, fifo.err);
  BOOST_TEST(fifo.err.find("lbt schedule did not write") != std::string::npos, fifo.err);
  const Result full = lbt::test::run_command(
      "sh -c '" + lbt::test::lbt_binary() +
      " schedule --config " LBT_SOURCE_DIR
      "/experiments/configs/synthetic_regression.toml --steps 5000000 >/dev/full'");
  BOOST_TEST(full.code == 1);
  BOOST_TEST(full.err.find("failed at step 65535") != std::string::npos, full.err);
  // --every N: the rows of every N-th step and each run's last, the same values (a long run's
  // curve was millions of rows or none).
  const std::string curve = "schedule --config " LBT_SOURCE_DIR
                            "/experiments/configs/fmnist_mlp.toml --train-size 50000 -b 128,4096";
  const auto all = read_schedule_csv(run_lbt(curve).out);
  const auto some = read_schedule_csv(run_lbt(curve + " --every 1000").out);
  BOOST_REQUIRE_EQUAL(some.size(), 2u);
  for (std::size_t c = 0; c < 2; ++c) {
    for (const auto& [step, lr] : some[c]) BOOST_TEST(lr == all[c].at(step), step);
    BOOST_TEST(some[c].rbegin()->first == all[c].rbegin()->first);  // 5849 and 179
  }
  BOOST_TEST(some[0].size() == 8u);  // 0, 179 (4096's last), 1000, ..., 5000, 5849
  // A peak LR past a double names optimizer.lr (it named schedule.decay, which no one set).
  const Result inf = run_lbt("schedule --config " LBT_SOURCE_DIR
                             "/experiments/configs/synthetic_regression.toml --steps 5 -b 1024"
                             " --set optimizer.lr=1e308 --set schedule.scaling=linear");
  BOOST_TEST(inf.code == 2);
  BOOST_TEST(inf.err.find("optimizer.lr must be finite once scaled") != std::string::npos, inf.err);
}
