// Reading a sweep for the fit and writing fit.json; see fit_files.hpp.
#include "experiments/sweep/fit_files.hpp"

#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/sweep/sweep_results.hpp"
#include "experiments/sweep/trial_noise.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
using analysis::LrPoint;
using analysis::MeasuredPoint;
using analysis::ScalingPoint;

namespace {

// Batch sizes whose best trial did not reach the target (left out of the fit).
std::vector<double> read_unreached(const fs::path& best_csv) {
  std::vector<double> unreached;
  const CsvTable best = read_csv(best_csv);
  const std::vector<int> c = best.require({"batch_size", "status"});
  for (std::size_t i = 0; i < best.rows.size(); ++i) {
    if (best.rows[i][c[1]] != "reached_target") unreached.push_back(best.positive(i, c[0]));
  }
  return unreached;
}

// The best trials' target_definition: one name, "mixed", or "" where not recorded (a sweep
// without a target_definition column was written by a trainer that read first passages). Only
// trials that ran to an outcome say how they read it: a pending or failed one's row holds the
// reader's default, which made a sweep's "ema" read "mixed" (2026-11-29 audit).
std::string read_definition(const fs::path& sweep_csv) {
  if (!fs::exists(sweep_csv)) return "";
  const CsvTable t = read_csv(sweep_csv);
  const int cd = t.column("target_definition"), cbest = t.column("best");
  const int cs = t.column("status");
  const auto ran = [](const std::string& status) {
    return status == "reached_target" || status == "budget_exhausted" || status == "diverged" ||
           status == "pruned" || status == "completed";
  };
  std::string definition;
  for (const auto& row : t.rows) {
    if (cd < 0 || cbest < 0 || row[cbest] != "true" || (cs >= 0 && !ran(row[cs]))) continue;
    if (definition.empty()) definition = row[cd];
    if (row[cd] != definition) return "mixed";
  }
  return definition;
}

// sweep.csv's best trials by batch size, read as `reading` ("": the sweep's own
// steps_lo/steps_hi; else that reading's columns, {} where not recorded): those that reached the
// target, and beside them (seed_steps) the best LR's seeds that did not; a batch size none
// of whose best seeds reached is not read (best.csv's unreached).
std::map<double, MeasuredPoint> read_best_seeds(const CsvTable& t, const std::string& reading) {
  const std::string prefix = reading.empty() ? "" : reading + "_";
  const std::vector<int> c =
      t.require({"batch_size", "status", "best", prefix + "steps_lo", prefix + "steps_hi"});
  const int steps_run = t.column("steps"), trial = t.column("trial");
  std::map<double, MeasuredPoint> by_batch;
  std::map<double, std::vector<analysis::BracketedSteps>> short_of_target;
  std::map<double, int> unmeasured;
  std::set<std::string> trials;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    const auto& row = t.rows[i];
    // A row pasted twice counted as more seeds (seeds 5 where the sweep ran 3).
    if (trial >= 0 && !trials.insert(row[trial]).second)
      t.reject(i, "trial " + row[trial] + " appears twice (one row per trial)");
    if (row[c[2]] != "true") continue;
    const double B = static_cast<double>(t.whole(i, c[0], 1));
    if (row[c[1]] != "reached_target" || row[c[4]].empty()) {  // short of the target: censored
      const bool known = steps_run >= 0 && !row[steps_run].empty();
      if (const auto seed = seed_steps(row[c[1]], -1, -1, known ? t.whole(i, steps_run, 0) : -1))
        short_of_target[B].push_back(*seed);
      else
        ++unmeasured[B];
      continue;
    }
    // A bracket (lo, hi] of steps: the last evaluation short of the target, the first meeting it.
    const std::int64_t hi = t.whole(i, c[4], 1),
                       lo = row[c[3]].empty() ? hi - 1 : t.whole(i, c[3], 0);
    if (lo >= hi) {
      t.reject(i, "columns " + prefix + "steps_lo and " + prefix + "steps_hi: the bracket (" +
                      row[c[3]] + ", " + row[c[4]] + "] holds no step (lo must be below hi)");
    }
    by_batch[B].batch_size = B;
    by_batch[B].seeds.push_back({static_cast<double>(lo), static_cast<double>(hi)});
  }
  for (const auto& [B, seeds] : short_of_target) {
    if (const auto p = by_batch.find(B); p != by_batch.end())
      p->second.seeds.insert(p->second.seeds.end(), seeds.begin(), seeds.end());
  }
  for (const auto& [B, n] : unmeasured)
    if (const auto p = by_batch.find(B); p != by_batch.end()) p->second.seeds_unmeasured = n;
  return by_batch;
}

// best.csv and sweep.csv are rewritten together, sweep.csv first: every batch size best.csv
// lists as reached has a best trial in sweep.csv that reached, unless one was cut or edited.
// And the other way: a best trial sweep.csv has at the target where best.csv lists none was
// fitted beside best.csv's (an edited best.csv's unreached batch size, or a row of a batch size
// the sweep never ran: B_crit 305.8 -> 116.7).
void check_best_in_sweep(const fs::path& sweep_dir,
                         const std::map<double, MeasuredPoint>& by_batch) {
  std::set<double> listed;
  for (const ScalingPoint& p : read_best_points(sweep_dir / "best.csv")) {
    listed.insert(p.batch_size);
    if (by_batch.count(p.batch_size)) continue;
    throw DataError((sweep_dir / "sweep.csv").string() + " has no best trial at batch size " +
                        std::to_string(static_cast<long long>(p.batch_size)) +
                        " that reached the target, which best.csv lists: sweep.csv was cut short "
                        "or edited",
                    rebuild_csv_hint(sweep_dir / "sweep.csv"));
  }
  for (const auto& [B, point] : by_batch) {
    if (listed.count(B)) continue;
    throw DataError((sweep_dir / "best.csv").string() + " lists no batch size " +
                        std::to_string(static_cast<long long>(B)) +
                        " at the target, where sweep.csv has its best trial there: one of the two "
                        "was edited",
                    rebuild_csv_hint(sweep_dir / "best.csv"));
  }
}

// sweep.csv with none of steps_lo, steps_hi and best was written by a sweep without brackets
// or seeds: then best.csv's step is the measurement.
bool sweep_csv_predates_brackets(const CsvTable& t) {
  return t.column("steps_lo") < 0 && t.column("steps_hi") < 0 && t.column("best") < 0;
}

}  // namespace

std::vector<ScalingPoint> read_best_points(const fs::path& best_csv) {
  if (!fs::exists(best_csv)) {
    throw ConfigError(
        "no best.csv in " + best_csv.parent_path().string(),
        "pass a directory written by `lbt sweep` (it rewrites best.csv after every trial)");
  }
  const CsvTable t = read_csv(best_csv);
  const std::vector<int> c = t.require({"batch_size", "status", "steps_to_target"});
  std::vector<ScalingPoint> pts;
  std::set<std::int64_t> batch_sizes;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    // A row pasted twice was fitted twice (the LR law's exponent 0.615 -> 0.569); compared as
    // numbers, since "4.0" reads as 4 (it passed as text, 2026-11-29 audit).
    if (!batch_sizes.insert(t.whole(i, c[0], 1)).second)
      t.reject(i, "batch size " + t.rows[i][c[0]] + " appears twice (one row per batch size)");
    if (t.rows[i][c[1]] != "reached_target" || t.rows[i][c[2]].empty()) continue;
    pts.push_back(
        {static_cast<double>(t.whole(i, c[0], 1)), static_cast<double>(t.whole(i, c[2], 1))});
  }
  return pts;
}

std::vector<MeasuredPoint> read_measured_points(const fs::path& sweep_dir,
                                                const std::string& reading) {
  const fs::path sweep_csv = sweep_dir / "sweep.csv";
  const CsvTable t = fs::exists(sweep_csv) ? read_csv(sweep_csv) : CsvTable{};
  std::vector<MeasuredPoint> points;
  if (t.header.empty() || sweep_csv_predates_brackets(t)) {
    if (!reading.empty()) return {};  // not recorded
    for (const ScalingPoint& p : read_best_points(sweep_dir / "best.csv"))
      points.push_back({p.batch_size, {{p.steps - 1, p.steps}}});
    return points;
  }
  if (!reading.empty() && t.column(reading + "_steps_hi") < 0) return {};  // not recorded
  const std::map<double, MeasuredPoint> by_batch = read_best_seeds(t, reading);
  if (reading.empty()) check_best_in_sweep(sweep_dir, by_batch);
  for (const auto& [B, p] : by_batch) points.push_back(p);
  return points;
}

std::vector<LrPoint> read_lr_points(const fs::path& sweep_dir) {
  const CsvTable t = read_csv(sweep_dir / "sweep.csv");
  const CsvTable best = read_csv(sweep_dir / "best.csv");
  const std::vector<int> c = t.require({"batch_size", "lr"});
  const std::vector<int> cb = best.require({"batch_size", "status", "lr"});
  const int cseed = t.column("seed");
  std::map<double, std::vector<double>> tried;
  for (std::size_t i = 0; i < t.rows.size(); ++i) {
    if (cseed >= 0 && t.rows[i][cseed] != "0") continue;  // the search's own trials
    if (!t.rows[i][c[1]].empty()) tried[t.positive(i, c[0])].push_back(t.positive(i, c[1]));
  }
  std::vector<LrPoint> points;
  for (std::size_t i = 0; i < best.rows.size(); ++i) {
    if (best.rows[i][cb[1]] != "reached_target") continue;
    LrPoint p;
    p.batch_size = best.positive(i, cb[0]);
    p.lr = p.lr_lo = p.lr_hi = best.positive(i, cb[2]);
    bool below = false, above = false;
    for (double lr : tried[p.batch_size]) {
      const double mid = std::sqrt(lr * p.lr);  // the optimum is nearer the best than lr
      if (lr < p.lr && (!below || mid > p.lr_lo)) p.lr_lo = mid, below = true;
      if (lr > p.lr && (!above || mid < p.lr_hi)) p.lr_hi = mid, above = true;
    }
    // A best LR at the edge of those tried bounds the optimum on one side only: it was closed at
    // the best LR, and a law and a plan read it as found (2026-11-30 audit).
    if (below && !above) p.lr_hi = HUGE_VAL;
    if (above && !below) p.lr_lo = 0.0;
    points.push_back(p);
  }
  return points;
}

// The column is optional (sweeps without noise measurement, or before it existed); its _lo
// column, where the value is empty, holds a lower bound (a B_simple too large to resolve).
analysis::BSimpleReadings best_trials_b_simple(const fs::path& best_csv, const char* column) {
  analysis::BSimpleReadings readings;
  if (!fs::exists(best_csv)) return readings;
  const CsvTable best = read_csv(best_csv);
  const int c = best.column(column), cs = best.column("status");
  const int clo = best.column(std::string(column) + "_lo");
  for (std::size_t i = 0; i < best.rows.size(); ++i) {
    const auto& row = best.rows[i];
    if (c < 0 || cs < 0 || row[cs] != "reached_target") continue;
    const bool bound = row[c].empty() && clo >= 0 && !row[clo].empty();
    if (row[c].empty() && !bound) continue;
    const double b = best.number(i, bound ? clo : c);
    // 0 is a measurement (no gradient noise: a deterministic problem), not a damaged cell.
    if (!(b >= 0.0)) best.reject(i, std::string(column) + " is a noise scale: 0 or above");
    if (bound && b == 0.0)
      ++readings.unbounded;
    else
      (bound ? readings.at_least : readings.values).push_back(b);
  }
  return readings;
}

analysis::SweepMeasurements read_sweep_measurements(const fs::path& sweep_dir) {
  analysis::SweepMeasurements sweep;
  sweep.measured = read_measured_points(sweep_dir);
  sweep.censored = analysis::leave_out_censored(sweep.measured);
  if (sweep.measured.size() < 3) {
    throw Error(
        "lbt fit needs at least 3 batch sizes whose best trial reached the target; the "
        "sweep in " +
            sweep_dir.string() + " has " + std::to_string(sweep.measured.size()),
        "sweep more batch sizes, raise sweep.max_examples / sweep.max_steps, widen the LR "
        "search, or loosen --target; see best.csv for the unreached ones");
  }
  sweep.unreached = read_unreached(sweep_dir / "best.csv");
  sweep.lr_points = read_lr_points(sweep_dir);
  sweep.b_simple_avg = best_trials_b_simple(sweep_dir / "best.csv", "b_simple_avg");
  sweep.b_simple_start = best_trials_b_simple(sweep_dir / "best.csv", "b_simple_start");
  sweep.b_noise = best_trials_b_noise(sweep_dir);
  sweep.definition = read_definition(sweep_dir / "sweep.csv");
  for (const char* name : kReadingNames) {
    std::vector<MeasuredPoint> points = read_measured_points(sweep_dir, name);
    if (points.empty()) continue;
    sweep.readings_censored[name] = analysis::leave_out_censored(points);
    sweep.readings[name] = std::move(points);
  }
  return sweep;
}

nlohmann::json fit_sweep(const fs::path& sweep_dir, const analysis::FitOptions& options) {
  const nlohmann::json fit =
      analysis::fit_measurements(read_sweep_measurements(sweep_dir), options);
  io::atomic_write(sweep_dir / "fit.json", fit.dump(2) + "\n");
  return fit;
}

namespace {

// Removes `file` where it is a regular file (not a directory or link someone put there).
void remove_stale(const fs::path& file) {
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(file, ec))) return;
  if (!fs::remove(file, ec) && ec) {
    throw Error("cannot remove " + file.string() +
                    ", which no longer matches the sweep's CSVs: " + ec.message(),
                io::file_error_hint(ec.value(), "remove it by hand"));
  }
}

}  // namespace

nlohmann::json refit_sweep(const fs::path& sweep_dir, std::string& why) {
  const fs::path file = sweep_dir / "fit.json";
  nlohmann::json fit;
  try {
    fit = analysis::fit_measurements(read_sweep_measurements(sweep_dir), analysis::FitOptions{});
  } catch (const Error& e) {
    why = e.what();
    remove_stale(file);
    return nullptr;
  }
  try {
    io::atomic_write(file, fit.dump(2) + "\n");
  } catch (const Error&) {
    remove_stale(file);
    throw;
  }
  return fit;
}

}  // namespace lbt::experiments
