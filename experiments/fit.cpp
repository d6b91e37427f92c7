// Sweep fit; see fit.hpp.
#include "experiments/fit.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <random>

#include "core/error.hpp"
#include "core/io.hpp"
#include "core/rng.hpp"
#include "experiments/sweep_results.hpp"
#include "experiments/trial_noise.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nlohmann::json interval(Interval i) {
  return nlohmann::json::array({i.lo, i.hi});
}

// Percentile-bootstrap interval of the median of `values` (>= 2), resampling the values.
Interval bootstrap_median(const std::vector<double>& values, const FitOptions& options,
                          std::uint64_t stream) {
  auto rng = make_rng(options.seed, RngStream::kSweep, stream);
  std::uniform_int_distribution<std::size_t> pick(0, values.size() - 1);
  std::vector<double> medians, sample(values.size());
  for (int r = 0; r < options.resamples; ++r) {
    for (auto& v : sample) v = values[pick(rng)];
    medians.push_back(median(sample));
  }
  return {quantile(medians, (1 - options.level) / 2), quantile(medians, (1 + options.level) / 2)};
}

nlohmann::json regime(const std::vector<ScalingPoint>& pts, double lo, double hi) {
  nlohmann::json sizes = nlohmann::json::array();
  for (const auto& p : pts) {
    if (p.batch_size >= lo && p.batch_size <= hi) sizes.push_back(p.batch_size);
  }
  nlohmann::json r = {{"batch_sizes", sizes}};
  r["from"] = sizes.empty() ? nlohmann::json() : sizes.front();
  r["to"] = sizes.empty() ? nlohmann::json() : sizes.back();
  return r;
}

// fit.json's lr_law (lr_law.hpp) and intervals.lr_law; null with a reason below 3 batch sizes.
void add_lr_law(nlohmann::json& fit, const std::vector<LrPoint>& points, const FitOptions& o) {
  fit["intervals"]["lr_law"] = nullptr;
  if (points.size() < 3) {
    fit["lr_law"] = {{"fitted", false}, {"why", "fewer than 3 batch sizes reached the target"}};
    return;
  }
  const LrLawFit law = fit_lr_law(points, o.resamples, o.level, o.seed);
  const auto inside = [&](double a) { return law.alpha.lo <= a && a <= law.alpha.hi; };
  nlohmann::json pts = nlohmann::json::array();
  for (const auto& p : points) {
    pts.push_back({{"batch_size", p.batch_size},
                   {"lr", p.lr},
                   {"lr_bracket", {p.lr_lo, p.lr_hi}},
                   {"power_law_lr", law.power.c * std::pow(p.batch_size, law.power.alpha)},
                   {"eps_opt", law.noise.eps_max / (1 + law.noise.B_noise / p.batch_size)}});
  }
  fit["lr_law"] = {
      {"fitted", true},
      {"model",
       "best lr = c B^alpha; and eps_opt(B) = eps_max / (1 + B_noise / B) (McCandlish et al. "
       "2018, eq. 2.6); least squares in log lr"},
      {"alpha", law.power.alpha},
      {"c", law.power.c},
      {"linear_rule_alpha_1", inside(1.0) ? "inside the interval" : "outside the interval"},
      {"sqrt_rule_alpha_0.5", inside(0.5) ? "inside the interval" : "outside the interval"},
      {"eps_max", law.noise.eps_max},
      // At the edge of the search range the data shows no flattening (or only flat): not a
      // measurement of B_noise.
      {"B_noise", law.noise.resolved ? nlohmann::json(law.noise.B_noise) : nlohmann::json()},
      {"B_noise_resolved", law.noise.resolved},
      {"points", pts}};
  if (law.resamples > 0) {
    fit["intervals"]["lr_law"] = {
        {"resamples", law.resamples},
        {"alpha", interval(law.alpha)},
        {"eps_max", interval(law.eps_max)},
        {"B_noise",
         {law.B_noise->lo,
          law.B_noise_upper_open ? nlohmann::json() : nlohmann::json(law.B_noise->hi)}}};
  }
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

std::vector<MeasuredPoint> read_measured_points(const fs::path& sweep_dir) {
  const fs::path sweep_csv = sweep_dir / "sweep.csv";
  const CsvTable t = fs::exists(sweep_csv) ? read_csv(sweep_csv) : CsvTable{};
  const int cb = t.column("batch_size"), cst = t.column("status"), cbest = t.column("best"),
            clo = t.column("steps_lo"), chi = t.column("steps_hi");
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

nlohmann::json fit_sweep(const fs::path& sweep_dir, const FitOptions& options) {
  const std::vector<MeasuredPoint> measured = read_measured_points(sweep_dir);
  std::vector<ScalingPoint> pts = point_estimates(measured);
  if (pts.size() < 3) {
    throw Error("lbt fit needs at least 3 batch sizes whose best trial reached the target; " +
                    (sweep_dir / "best.csv").string() + " has " + std::to_string(pts.size()),
                "sweep more batch sizes, raise sweep.max_examples / sweep.max_steps, widen the LR "
                "search, or loosen --target; see best.csv for the unreached ones");
  }
  const CriticalBatchFit f = fit_critical_batch(pts);
  const auto intervals = [&](BootstrapSources sources) {
    return intervals_of(
        measurement_bootstrap_fits(measured, sources, options.resamples, options.seed),
        options.level);
  };
  const BootstrapIntervals ci = intervals({true, true, true});
  const BootstrapIntervals by_seeds = intervals({false, true, false});
  const BootstrapIntervals by_resolution = intervals({false, false, true});
  const BootstrapIntervals by_batch_sizes = intervals({true, false, false});

  nlohmann::json points = nlohmann::json::array();
  for (std::size_t i = 0; i < pts.size(); ++i) {
    const ScalingPoint& p = pts[i];
    nlohmann::json brackets = nlohmann::json::array();
    for (const auto& b : measured[i].seeds) brackets.push_back({b.lo, b.hi});
    points.push_back({{"batch_size", p.batch_size},
                      {"steps", p.steps},
                      {"examples", p.steps * p.batch_size},
                      {"seeds", measured[i].seeds.size()},
                      {"steps_brackets", brackets},
                      {"fitted_steps", f.S_min * (1 + f.B_noise / p.batch_size)}});
  }
  // Local scaling exponent d log S / d log B between neighbours: -1 is perfect scaling, 0 is
  // no benefit from a bigger batch (Shallue et al. fig. 1).
  nlohmann::json slopes = nlohmann::json::array();
  for (std::size_t i = 0; i + 1 < pts.size(); ++i) {
    const double s = std::log(pts[i + 1].steps / pts[i].steps) /
                     std::log(pts[i + 1].batch_size / pts[i].batch_size);
    slopes.push_back({{"from", pts[i].batch_size}, {"to", pts[i + 1].batch_size}, {"slope", s}});
  }
  const double tol = options.regime_tolerance;
  const double perfect_max = tol * f.B_crit, parallel_min = f.B_crit / tol;
  nlohmann::json regimes = {
      {"tolerance", tol},
      {"perfect_scaling", regime(pts, 0, perfect_max)},
      {"diminishing_returns",
       regime(pts, std::nextafter(perfect_max, INFINITY), std::nextafter(parallel_min, 0.0))},
      {"maximal_data_parallelism", regime(pts, parallel_min, INFINITY)},
  };
  regimes["perfect_scaling"]["model_max_batch"] = perfect_max;
  regimes["maximal_data_parallelism"]["model_min_batch"] = parallel_min;

  nlohmann::json fit = {
      {"model", "S = S_min * (1 + B_crit / B);  E = S * B;  B_crit = E_min / S_min"},
      {"method",
       "least squares in log S (Gauss-Newton from the 1/S^2-weighted line S = a + b/B) of the "
       "median over seeds of steps_hi; percentile bootstrap resampling batch sizes, seeds within "
       "each, and drawing each seed's step within its bracket (steps_lo, steps_hi]"},
      {"S_min", f.S_min},
      {"E_min", f.E_min},
      {"B_crit", f.B_crit},
      {"rms_log_residual", f.rms_log_residual},
      {"intervals",
       {{"level", options.level},
        {"resamples", ci.resamples},
        {"S_min", interval(ci.S_min)},
        {"E_min", interval(ci.E_min)},
        {"B_crit", interval(ci.B_crit)},
        // Each source alone: how much of the interval seed noise, evaluation resolution and
        // the scatter of batch sizes about the model make.
        {"components",
         {{"seeds", {{"S_min", interval(by_seeds.S_min)}, {"B_crit", interval(by_seeds.B_crit)}}},
          {"resolution",
           {{"S_min", interval(by_resolution.S_min)}, {"B_crit", interval(by_resolution.B_crit)}}},
          {"batch_sizes",
           {{"S_min", interval(by_batch_sizes.S_min)},
            {"B_crit", interval(by_batch_sizes.B_crit)}}}}}}},
      {"points", points},
      {"local_slopes", slopes},
      {"regimes", regimes},
  };
  nlohmann::json unreached = nlohmann::json::array();
  const CsvTable best = read_csv(sweep_dir / "best.csv");
  for (const auto& row : best.rows) {
    if (row[best.column("status")] != "reached_target")
      unreached.push_back(std::stod(row[best.column("batch_size")]));
  }
  fit["batch_sizes_unreached"] = unreached;
  add_lr_law(fit, read_lr_points(sweep_dir), options);
  // The measured noise scale of the best trials beside the fitted B_crit (McCandlish et al.
  // predict B_crit ~ B_noise, with B_simple its proxy): the median of their averaged B_simple,
  // with a percentile-bootstrap interval over those trials; null where none measured it.
  const std::vector<double> averaged = best_trials_b_simple(sweep_dir / "best.csv", "b_simple_avg");
  const std::vector<double> starts = best_trials_b_simple(sweep_dir / "best.csv", "b_simple_start");
  fit["B_simple"] = nullptr;
  fit["B_simple_start"] = starts.empty() ? nlohmann::json() : nlohmann::json(median(starts));
  fit["B_simple_trials"] = averaged.size();
  fit["intervals"]["B_simple"] = nullptr;
  if (!averaged.empty()) {
    const double b_simple = median(averaged);
    fit["B_simple"] = b_simple;
    fit["b_crit_over_b_simple"] = f.B_crit / b_simple;
    if (averaged.size() >= 2) {
      auto rng = make_rng(options.seed, RngStream::kSweep, 0xB51);
      std::uniform_int_distribution<std::size_t> pick(0, averaged.size() - 1);
      std::vector<double> medians, sample(averaged.size());
      for (int r = 0; r < options.resamples; ++r) {
        for (auto& v : sample) v = averaged[pick(rng)];
        medians.push_back(median(sample));
      }
      fit["intervals"]["B_simple"] = interval(
          {quantile(medians, (1 - options.level) / 2), quantile(medians, (1 + options.level) / 2)});
    }
  }
  // B_noise (eq. 2.8) as the best trials' Hessian probes measured it (noise.hessian.every):
  // the median of their medians, with a bootstrap interval over trials; null where none did.
  const std::vector<double> b_noise = best_trials_b_noise(sweep_dir);
  fit["B_noise_measured"] = b_noise.empty() ? nlohmann::json() : nlohmann::json(median(b_noise));
  fit["B_noise_measured_trials"] = b_noise.size();
  fit["intervals"]["B_noise_measured"] =
      b_noise.size() >= 2 ? interval(bootstrap_median(b_noise, options, 0xB40)) : nlohmann::json();
  io::atomic_write(sweep_dir / "fit.json", fit.dump(2) + "\n");
  return fit;
}

std::string format_fit_line(const nlohmann::json& fit) {
  auto q = [&](const char* k) {
    char buf[96];
    const auto& i = fit["intervals"][k];
    std::snprintf(buf, sizeof buf, "%s = %.4g [%.4g, %.4g]", k, fit[k].get<double>(),
                  i[0].get<double>(), i[1].get<double>());
    return std::string(buf);
  };
  std::string line = q("S_min") + ", " + q("E_min") + ", " + q("B_crit") + " (95% bootstrap)";
  if (fit.contains("lr_law") && fit["lr_law"].value("fitted", false) &&
      fit["intervals"]["lr_law"].is_object()) {
    char buf[96];
    const auto& a = fit["intervals"]["lr_law"]["alpha"];
    std::snprintf(buf, sizeof buf, "; best lr ~ B^%.3g [%.3g, %.3g]",
                  fit["lr_law"]["alpha"].get<double>(), a[0].get<double>(), a[1].get<double>());
    line += buf;
  }
  if (!fit.value("batch_sizes_unreached", nlohmann::json::array()).empty()) {
    line += "; left out, no trial reached the target: B = " + fit["batch_sizes_unreached"].dump();
  }
  return line;
}

}  // namespace lbt::experiments
