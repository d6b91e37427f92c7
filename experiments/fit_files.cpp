// Reading a sweep for the fit and writing fit.json; see fit_files.hpp.
#include "experiments/fit_files.hpp"

#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/sweep_results.hpp"
#include "experiments/trial_noise.hpp"

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
  for (const auto& row : best.rows) {
    if (row[best.column("status")] != "reached_target")
      unreached.push_back(std::stod(row[best.column("batch_size")]));
  }
  return unreached;
}

// The best trials' target_definition: one name, "mixed", or "" where not recorded.
std::string read_definition(const fs::path& sweep_csv) {
  if (!fs::exists(sweep_csv)) return "";
  const CsvTable t = read_csv(sweep_csv);
  const int cd = t.column("target_definition"), cbest = t.column("best");
  std::string definition;
  for (const auto& row : t.rows) {
    if (cd < 0 || cbest < 0 || row[cbest] != "true") continue;
    if (definition.empty()) definition = row[cd];
    if (row[cd] != definition) return "mixed";
  }
  return definition;
}

}  // namespace

std::vector<ScalingPoint> read_best_points(const fs::path& best_csv) {
  if (!fs::exists(best_csv)) {
    throw Error("no best.csv in " + best_csv.parent_path().string(),
                "pass a directory written by `lbt sweep` (it rewrites best.csv after every trial)");
  }
  const CsvTable t = read_csv(best_csv);
  const int cb = t.column("batch_size"), cs = t.column("steps_to_target"), cst = t.column("status");
  if (cb < 0 || cs < 0 || cst < 0) {
    throw DataError(best_csv.string() + " lacks a batch_size, status or steps_to_target column",
                    "rerun `lbt sweep --collect` on the directory to rewrite it");
  }
  std::vector<ScalingPoint> pts;
  for (const auto& row : t.rows) {
    if (row[cst] != "reached_target" || row[cs].empty()) continue;
    pts.push_back({std::stod(row[cb]), std::stod(row[cs])});
  }
  return pts;
}

std::vector<MeasuredPoint> read_measured_points(const fs::path& sweep_dir,
                                                const std::string& reading) {
  const fs::path sweep_csv = sweep_dir / "sweep.csv";
  const CsvTable t = fs::exists(sweep_csv) ? read_csv(sweep_csv) : CsvTable{};
  const std::string prefix = reading.empty() ? "" : reading + "_";
  const int cb = t.column("batch_size"), cst = t.column("status"), cbest = t.column("best"),
            clo = t.column(prefix + "steps_lo"), chi = t.column(prefix + "steps_hi");
  if (!reading.empty() && (clo < 0 || chi < 0)) return {};  // not recorded
  std::vector<MeasuredPoint> points;
  if (cb < 0 || cst < 0 || cbest < 0 || clo < 0 || chi < 0) {
    // A sweep written before brackets and seeds: best.csv's step, known to one step.
    for (const ScalingPoint& p : read_best_points(sweep_dir / "best.csv"))
      points.push_back({p.batch_size, {{p.steps - 1, p.steps}}});
    return points;
  }
  std::map<double, MeasuredPoint> by_batch;
  for (const auto& row : t.rows) {
    if (row[cbest] != "true" || row[cst] != "reached_target" || row[chi].empty()) continue;
    const double B = std::stod(row[cb]), hi = std::stod(row[chi]);
    by_batch[B].batch_size = B;
    by_batch[B].seeds.push_back({row[clo].empty() ? hi - 1 : std::stod(row[clo]), hi});
  }
  for (auto& [B, p] : by_batch) points.push_back(p);
  return points;
}

std::vector<LrPoint> read_lr_points(const fs::path& sweep_dir) {
  const CsvTable t = read_csv(sweep_dir / "sweep.csv");
  const CsvTable best = read_csv(sweep_dir / "best.csv");
  const int cb = t.column("batch_size"), clr = t.column("lr"), cseed = t.column("seed");
  std::map<double, std::vector<double>> tried;
  for (const auto& row : t.rows) {
    if (cseed >= 0 && row[cseed] != "0") continue;  // the search's own trials
    if (!row[clr].empty()) tried[std::stod(row[cb])].push_back(std::stod(row[clr]));
  }
  std::vector<LrPoint> points;
  for (const auto& row : best.rows) {
    if (row[best.column("status")] != "reached_target") continue;
    LrPoint p;
    p.batch_size = std::stod(row[best.column("batch_size")]);
    p.lr = p.lr_lo = p.lr_hi = std::stod(row[best.column("lr")]);
    for (double lr : tried[p.batch_size]) {
      const double mid = std::sqrt(lr * p.lr);  // the optimum is nearer the best than lr
      if (lr < p.lr && (p.lr_lo == p.lr || mid > p.lr_lo)) p.lr_lo = mid;
      if (lr > p.lr && (p.lr_hi == p.lr || mid < p.lr_hi)) p.lr_hi = mid;
    }
    points.push_back(p);
  }
  return points;
}

std::vector<double> best_trials_b_simple(const fs::path& best_csv, const char* column) {
  std::vector<double> values;
  if (!fs::exists(best_csv)) return values;
  const CsvTable best = read_csv(best_csv);
  const int c = best.column(column), cs = best.column("status");
  for (const auto& row : best.rows) {
    if (c >= 0 && cs >= 0 && row[cs] == "reached_target" && !row[c].empty()) {
      values.push_back(std::stod(row[c]));
    }
  }
  return values;
}

analysis::SweepMeasurements read_sweep_measurements(const fs::path& sweep_dir) {
  analysis::SweepMeasurements sweep;
  sweep.measured = read_measured_points(sweep_dir);
  if (sweep.measured.size() < 3) {
    throw Error("lbt fit needs at least 3 batch sizes whose best trial reached the target; " +
                    (sweep_dir / "best.csv").string() + " has " +
                    std::to_string(sweep.measured.size()),
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
    if (!points.empty()) sweep.readings[name] = std::move(points);
  }
  return sweep;
}

nlohmann::json fit_sweep(const fs::path& sweep_dir, const analysis::FitOptions& options) {
  const nlohmann::json fit =
      analysis::fit_measurements(read_sweep_measurements(sweep_dir), options);
  io::atomic_write(sweep_dir / "fit.json", fit.dump(2) + "\n");
  return fit;
}

}  // namespace lbt::experiments
