// lbt.fit_critical_batch and lbt.fit_sweep: S(B) = S_min (1 + B_noise / B) fitted to
// steps-to-result (McCandlish et al. 2018, arXiv:1812.06162, eq. 2.11) by
// analysis/critical_batch.hpp, with percentile-bootstrap intervals; and `lbt fit SWEEP_DIR`
// (experiments/sweep/fit_files.hpp, over analysis/sweep_fit.hpp) returning its fit.json.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/critical_batch.hpp"
#include "analysis/profile_interval.hpp"
#include "analysis/sweep_fit.hpp"
#include "experiments/sweep/fit_files.hpp"
#include "python/bindings.hpp"

namespace py = pybind11;

namespace lbt::python {
namespace {

using analysis::ScalingPoint;

std::vector<ScalingPoint> scaling_points(py::array_t<double, py::array::forcecast> batch_sizes,
                                         py::array_t<double, py::array::forcecast> steps) {
  if (batch_sizes.ndim() != 1 || steps.ndim() != 1 || batch_sizes.shape(0) != steps.shape(0)) {
    bad_argument("fit_critical_batch", "batch_sizes and steps must be 1-D and of the same length");
  }
  const auto B = batch_sizes.unchecked<1>();
  const auto S = steps.unchecked<1>();
  std::vector<ScalingPoint> points;
  for (py::ssize_t i = 0; i < B.shape(0); ++i) {
    if (!(B(i) > 0.0 && std::isfinite(B(i)) && S(i) > 0.0 && std::isfinite(S(i)))) {
      bad_argument("fit_critical_batch",
                   "batch sizes and steps must be positive and finite, got "
                   "B=" +
                       number(B(i)) + ", S=" + number(S(i)) + " at index " + std::to_string(i));
    }
    points.push_back({B(i), S(i)});
  }
  return points;
}

// (lo, hi), (lo, None) where it is open above (B_crit above the sweep), or None where the
// bootstrap resolved none (too few resamples fitted): fit_sweep's [lo, hi], [lo, null], null.
py::object interval(const analysis::Interval& i) {
  const nlohmann::json j = analysis::interval_json(i);
  if (j.is_null()) return py::none();
  return py::make_tuple(i.lo, j[1].is_null() ? py::object(py::none()) : py::float_(i.hi));
}

// A quantity of the critical batch: None where the fit resolved none (steps that do not fall).
py::object resolved(double value, const analysis::CriticalBatchFit& f) {
  return f.resolved ? py::object(py::float_(value)) : py::object(py::none());
}
py::object resolved(const analysis::Interval& i, const analysis::CriticalBatchFit& f) {
  return f.resolved ? interval(i) : py::object(py::none());
}

// The intervals fit_critical_batch's `interval` names: "profile" (analysis/profile_interval.hpp,
// the default: its coverage was measured near the nominal level) or "bootstrap" over the
// batch sizes (critical_batch.hpp; undercovers with few of them).
analysis::BootstrapIntervals intervals_by(const std::string& method,
                                          const std::vector<ScalingPoint>& points,
                                          const analysis::CriticalBatchFit& f, int resamples,
                                          double level, std::uint64_t seed) {
  if (method == "profile") return analysis::profile_critical_batch(points, f, level);
  return analysis::bootstrap_critical_batch(points, resamples, level, seed);
}

py::dict fit_dict(const std::vector<ScalingPoint>& points, const std::string& method, int resamples,
                  double level, std::uint64_t seed) {
  const analysis::CriticalBatchFit f = analysis::fit_critical_batch(points);
  py::dict d;
  // Above the sweep S_min is the optimiser's floor: None, its interval [0, hi] bounding it above.
  d["S_min"] = f.above_sweep ? py::object(py::none()) : py::object(py::float_(f.S_min));
  d["E_min"] = resolved(f.E_min, f);
  // B_noise = B_crit in this model (the paper's name too); neither above the sweep.
  const bool measured = f.b_crit_measured();
  d["B_crit"] = measured ? py::object(py::float_(f.B_crit)) : py::object(py::none());
  d["B_noise"] = d["B_crit"];
  d["resolved"] = measured;
  d["above_sweep"] = f.above_sweep;
  const char* extrapolated = analysis::b_crit_extrapolated(points, f);
  d["b_crit_extrapolated"] = extrapolated ? py::object(py::str(extrapolated)) : py::none();
  d["rms_log_residual"] = f.rms_log_residual;
  if (!measured) {
    const char* why = f.resolved ? analysis::kCriticalBatchAboveSweep : analysis::kNoCriticalBatch;
    d["warning"] = why;
    const std::string text = std::string("fit_critical_batch: ") + why;
    if (PyErr_WarnEx(PyExc_UserWarning, text.c_str(), 1) < 0) throw py::error_already_set();
  }
  if (resamples > 0) {
    const analysis::BootstrapIntervals ci = intervals_by(method, points, f, resamples, level, seed);
    py::dict intervals;
    intervals["S_min"] = interval(ci.S_min);
    intervals["E_min"] = resolved(ci.E_min, f);
    intervals["B_crit"] = resolved(ci.B_crit, f);
    intervals["B_noise"] = resolved(ci.B_noise, f);
    d["intervals"] = intervals;
    d["interval"] = method;
    d["resamples"] = method == "bootstrap" ? py::object(py::int_(ci.resamples)) : py::none();
    d["level"] = level;
  }
  return d;
}

// fit.json's object as Python's json module reads it (nlohmann writes NaN as null: None).
py::object to_python(const nlohmann::json& j) {
  return py::module_::import("json").attr("loads")(j.dump());
}

[[noreturn]] void no_sweep_dir(const std::filesystem::path& dir) {
  const std::string message = "fit_sweep: no sweep directory at " + dir.string() +
                              " (give the --out directory of an `lbt sweep`)";
  PyErr_SetString(PyExc_FileNotFoundError, message.c_str());
  throw py::error_already_set();
}

// fit_sweep writes fit.json, so it takes the resamples lbt fit takes: 0 there replaced fit.json's
// intervals with nulls where lbt fit --resamples 0 is refused. fit_critical_batch writes
// nothing, and 0 asks it for no intervals.
void check_level(const char* function, int resamples, double level, bool writes_fit_json) {
  if (!(level > 0.0 && level < 1.0)) {
    bad_argument(function, "level must be in (0, 1), got " + number(level));
  }
  const int fewest = writes_fit_json ? static_cast<int>(analysis::min_resamples(level)) : 0;
  if (resamples < fewest || resamples > analysis::kMaxResamples)
    bad_argument(function, "resamples must be in [" + std::to_string(fewest) + ", " +
                               std::to_string(analysis::kMaxResamples) + "], got " +
                               std::to_string(resamples));
}

}  // namespace

void bind_fit(py::module_& m) {
  using namespace pybind11::literals;
  m.def(
      "fit_critical_batch",
      [](py::array_t<double, py::array::forcecast> batch_sizes,
         py::array_t<double, py::array::forcecast> steps, const std::string& interval,
         int resamples, double level, std::uint64_t seed) {
        if (interval != "profile" && interval != "bootstrap")
          bad_argument("fit_critical_batch",
                       "interval must be \"profile\" or \"bootstrap\", got \"" + interval + "\"");
        check_level("fit_critical_batch", resamples, level, /*writes_fit_json=*/false);
        return fit_dict(scaling_points(batch_sizes, steps), interval, resamples, level, seed);
      },
      "batch_sizes"_a, "steps"_a, py::kw_only(), "interval"_a = "profile", "resamples"_a = 2000,
      "level"_a = 0.95, "seed"_a = 0, R"doc(
Fits S(B) = S_min (1 + B_crit / B) to steps-to-result S at batch sizes B (McCandlish et al.
2018, eq. 2.11; least squares in log S). Returns {S_min, E_min, B_crit, B_noise, resolved,
above_sweep, b_crit_extrapolated ("below" / "above" the batch sizes given, else None),
rms_log_residual, intervals: {name: (lo, hi) or None}, interval, resamples, level}.
interval="profile" (default): profile-likelihood intervals, an F test on the log residuals with
n - 2 degrees of freedom (Bates & Watts 1988, sec. 6.1; held the truth in 94-96% of seeded
repetitions for a nominal 95%); "bootstrap": percentile bootstrap over batch sizes with
`resamples` and `seed` (undercovers with few batch sizes; None where fewer than 40 resamples
fitted). resamples=0: no intervals. (lo, None) where B_crit's is open above. B_crit is None
with a UserWarning where the steps do not fall with B (E_min too) and where they fall as 1/B
throughout (above_sweep: B_crit past 100x the largest batch size; S_min None too, its interval
(0, hi)). Needs >= 3 distinct batch sizes.
)doc");
  m.def(
      "fit_sweep",
      [](const std::filesystem::path& sweep_dir, int resamples, double level, std::uint64_t seed,
         double regime_tolerance) {
        check_level("fit_sweep", resamples, level, /*writes_fit_json=*/true);
        if (!(regime_tolerance > 0.0 && std::isfinite(regime_tolerance))) {
          bad_argument("fit_sweep",
                       "regime_tolerance must be finite and > 0, got " + number(regime_tolerance));
        }
        if (!std::filesystem::is_directory(sweep_dir)) no_sweep_dir(sweep_dir);
        analysis::FitOptions options;
        options.resamples = resamples;
        options.level = level;
        options.seed = seed;
        options.regime_tolerance = regime_tolerance;
        return to_python(experiments::fit_sweep(sweep_dir, options));
      },
      "sweep_dir"_a, py::kw_only(), "resamples"_a = analysis::FitOptions{}.resamples,
      "level"_a = analysis::FitOptions{}.level, "seed"_a = analysis::FitOptions{}.seed,
      "regime_tolerance"_a = analysis::FitOptions{}.regime_tolerance, R"doc(
`lbt fit SWEEP_DIR`: the critical-batch fit of a sweep's best.csv with its intervals, regimes,
LR-vs-batch law and measured B_simple. Writes SWEEP_DIR/fit.json (as `lbt fit` does) and
returns it as a dict.
)doc");
}

}  // namespace lbt::python
