// The adaptive LR search, pruning and seeds through the real binary, on the
// synthetic sweep preset: brackets within 5%, the best LR interior at every batch size,
// pruning that leaves every winner as it was, seeds in best.csv, and --extend for more seeds.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "experiments/sweep/sweep_results.hpp"
#include "support/cli_runner.hpp"

namespace fs = std::filesystem;
using lbt::experiments::read_csv;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

BOOST_AUTO_TEST_SUITE(sweep_search)

namespace {

const std::string kPreset =
    std::string(LBT_SOURCE_DIR) + "/experiments/configs/synthetic_sweep.toml";

std::string sweep(const fs::path& dir, const std::string& extra = "") {
  return "sweep --config " + kPreset + " --jobs 2 --no-plots --batch-sizes 16,64,256,1024 --out " +
         dir.string() + " " + extra;
}

// batch size -> the best trial's LR, from best.csv.
std::map<std::string, std::string> best_lrs(const fs::path& dir) {
  const auto t = read_csv(dir / "best.csv");
  std::map<std::string, std::string> out;
  for (const auto& row : t.rows) out[row[t.column("batch_size")]] = row[t.column("lr")];
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(adaptive_search_finds_an_interior_best_lr_with_5_percent_brackets_and_seeds) {
  const fs::path dir = scratch() / "adaptive";
  auto r = run_lbt(sweep(dir, "--set sweep.seeds=2"));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto trials = read_csv(dir / "sweep.csv");
  const int c_status = trials.column("status"), c_lo = trials.column("steps_lo"),
            c_hi = trials.column("steps_hi"), c_b = trials.column("batch_size"),
            c_lr = trials.column("lr"), c_seed = trials.column("seed");
  int reached = 0, pruned = 0;
  std::map<std::string, std::vector<double>> searched;  // batch size -> LRs of the search
  for (const auto& row : trials.rows) {
    if (row[c_seed] == "0") searched[row[c_b]].push_back(std::stod(row[c_lr]));
    pruned += row[c_status] == "pruned";
    if (row[c_status] != "reached_target") continue;
    ++reached;
    const double lo = std::stod(row[c_lo]), hi = std::stod(row[c_hi]);
    BOOST_TEST(lo < hi);
    BOOST_TEST(hi - lo <= std::max(1.0, 0.05 * hi), row[0] << ": (" << lo << ", " << hi << "]");
  }
  BOOST_TEST_MESSAGE(trials.rows.size()
                     << " trials, " << reached << " reached, " << pruned << " pruned");
  BOOST_TEST(pruned > 0);
  const auto best = read_csv(dir / "best.csv");
  for (const auto& row : best.rows) {
    BOOST_TEST_CONTEXT("B=" << row[best.column("batch_size")]) {
      BOOST_TEST_REQUIRE(row[best.column("status")] == "reached_target");
      BOOST_TEST(row[best.column("lr_at_edge")] == "false");
      // Why the search ended, then the seeds (adding them replaced the search's reason).
      const std::string why = row[best.column("search")];
      BOOST_TEST(why.starts_with("done: "), why);
      BOOST_TEST(why.ends_with("; seeds: 2 at the best LR"), why);
      const double lr = std::stod(row[best.column("lr")]);
      double below = 0, above = INFINITY;
      for (double x : searched[row[best.column("batch_size")]]) {
        if (x < lr) below = std::max(below, x);
        if (x > lr) above = std::min(above, x);
      }
      // Interior, refined to 2^(1/2) (sweep.csv holds 6 significant digits).
      BOOST_TEST(lr / below <= std::sqrt(2.0) * (1 + 1e-5));
      BOOST_TEST(above / lr <= std::sqrt(2.0) * (1 + 1e-5));
      BOOST_TEST(row[best.column("seeds")] == "2");
      const double median = std::stod(row[best.column("steps_median")]);
      BOOST_TEST(std::stod(row[best.column("steps_min")]) <= median);
      BOOST_TEST(median <= std::stod(row[best.column("steps_max")]));
    }
  }
  const auto fit = nlohmann::json::parse(slurp(dir / "fit.json"));
  BOOST_TEST(fit["intervals"]["components"]["seeds"]["B_crit"].size() == 2u);
  BOOST_TEST(fit["lr_law"]["alpha"].is_number());

  // Pruning never changes the winner: the same sweep without it picks the same LRs, and every
  // trial the pruned sweep let reach the target read the same steps (16_3 read 47 pruned and
  // 151 unpruned, when the prune step was evaluated outside the trial's cadence), and every
  // pruned trial reads more steps than its batch size's best.
  const fs::path unpruned = scratch() / "unpruned";
  r = run_lbt(sweep(unpruned, "--set sweep.seeds=2 --set sweep.prune=false"));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(best_lrs(unpruned) == best_lrs(dir));
  BOOST_TEST(slurp(unpruned / "best.csv").find("pruned") == std::string::npos);
  const auto full = read_csv(unpruned / "sweep.csv");
  std::map<std::string, std::vector<std::string>> full_by_trial;
  for (const auto& row : full.rows) full_by_trial[row[full.column("trial")]] = row;
  const auto bests = read_csv(dir / "best.csv");
  std::map<std::string, double> best_steps;
  for (const auto& row : bests.rows)
    best_steps[row[bests.column("batch_size")]] = std::stod(row[bests.column("steps_to_target")]);
  int compared = 0;
  for (const auto& row : trials.rows) {
    const auto it = full_by_trial.find(row[trials.column("trial")]);
    if (it == full_by_trial.end() || it->second[full.column("lr")] != row[c_lr]) continue;
    const std::string& steps = it->second[full.column("steps_to_target")];
    BOOST_TEST_CONTEXT(row[trials.column("trial")] << ": " << row[c_status] << " " << steps) {
      if (row[c_status] == "pruned")
        BOOST_TEST((steps.empty() || std::stod(steps) > best_steps.at(row[c_b])));
      else
        BOOST_TEST(row[trials.column("steps_to_target")] == steps);
    }
    ++compared;
  }
  BOOST_TEST(compared >= 20);

  // A rerun decides the same plan from the run directories and runs nothing.
  const std::string before = slurp(dir / "best.csv");
  r = run_lbt(sweep(dir, "--set sweep.seeds=2"));
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.find(" run now") != std::string::npos);
  BOOST_TEST(r.out.find("(0 run now") != std::string::npos, r.out);
  BOOST_TEST(slurp(dir / "best.csv") == before);  // the search column too (it was emptied)
  // More seeds: refused without --extend, then only the new seeds run.
  r = run_lbt(sweep(dir, "--set sweep.seeds=3"));
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("sweep.seeds: 2 -> 3") != std::string::npos, r.err);
  r = run_lbt(sweep(dir, "--set sweep.seeds=3 --extend"));
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  BOOST_TEST(r.out.find("(4 run now") != std::string::npos, r.out);
  const auto extended = read_csv(dir / "best.csv");
  for (const auto& row : extended.rows) BOOST_TEST(row[extended.column("seeds")] == "3");
}

BOOST_AUTO_TEST_CASE(bad_search_settings_are_one_line_errors_before_any_trial) {
  for (const std::string bad :
       {"sweep.seeds=0", "sweep.lr_multipliers=[1.0,2.0,1.0]", "sweep.lr_refine_ratio=1.0",
        "sweep.lr_refine_ratio=0.5", "sweep.eval_growth=0.9"}) {
    const fs::path dir = scratch() / "bad";
    const auto r = run_lbt(sweep(dir, "--set " + bad));
    BOOST_TEST(r.code == 2, bad);
    BOOST_TEST(r.err.find(bad.substr(0, bad.find('='))) != std::string::npos, r.err);
    BOOST_TEST(!fs::exists(dir / "trials"), bad);
  }
  // A batch size twice, on the command line (a typo for another size): refused, not merged.
  const auto twice = run_lbt("sweep --config " + kPreset + " --batch-sizes 16,64,16 --out " +
                             (scratch() / "twice").string());
  BOOST_TEST(twice.code == 2);
  BOOST_TEST(
      twice.err.find("--batch-sizes must be distinct values, got 16 twice") != std::string::npos,
      twice.err);
  // An empty LR range: the lowest multiple above the highest.
  const auto r = run_lbt(sweep(scratch() / "empty",
                               "--set sweep.lr_multipliers=[] "
                               "--set sweep.lr_min_factor=4 "
                               "--set sweep.lr_max_factor=0.5"));
  BOOST_TEST(r.code == 2);
  BOOST_TEST(r.err.find("sweep.lr_min_factor") != std::string::npos, r.err);
}

BOOST_AUTO_TEST_SUITE_END()
