// lbt.GradientNoise: B_simple = tr(Sigma) / |G|^2 from gradient norms a Python training loop
// already has, through noise/gradient_noise.hpp's two-batch estimator and NoiseScaleTracker
// (McCandlish et al. 2018, arXiv:1812.06162, eq. 2.9 and App. A.1) and noise/per_example.hpp.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "noise/gradient_noise.hpp"
#include "noise/per_example.hpp"
#include "python/bindings.hpp"

namespace py = pybind11;

namespace lbt::python {
namespace {

using noise::NoiseEstimate;
using noise::NoiseScale;
using noise::NoiseScaleTracker;

// A NaN from the C++ side means "no value yet" (too few samples, |G|^2 not resolved from 0);
// Python callers test `is None` for that rather than math.isnan.
std::optional<double> value_or_none(double x) {
  return std::isnan(x) ? std::nullopt : std::optional<double>(x);
}
std::optional<double> finite_or_none(double x) {
  return std::isfinite(x) ? std::optional<double>(x) : std::nullopt;
}

std::string check_estimate_kind(const std::string& function, const std::string& kind) {
  if (kind != "averaged" && kind != "now") {
    bad_argument(function,
                 "estimate must be \"averaged\" (EMA over training) or \"now\" (the "
                 "last `window` updates), got \"" +
                     kind + "\"");
  }
  return kind;
}

void check_finite(const char* function, const char* name, double x) {
  if (!std::isfinite(x))
    bad_argument(function, std::string(name) + " must be finite, got " + number(x));
}

// A squared norm: finite and >= 0 (per-example norms are checked the same, mean_of_norms).
void check_squared_norm(const char* function, const char* name, double x) {
  if (!(x >= 0.0) || !std::isfinite(x)) {
    bad_argument(function,
                 std::string(name) + " must be a squared norm, finite and >= 0, got " + number(x));
  }
}

// |G_n|^2, the squared norm of the batch's mean gradient, is at most the mean of the examples'
// |g_n|^2 (Jensen); beyond float32 round-off (a relative 1e-4) the two were not measured on one
// batch, and the estimate would give a negative tr(Sigma) (it gave -8 for norms [1, 1] and 5).
void check_batch_within_examples(const char* function, double mean_example_sq, double g_batch_sq) {
  if (g_batch_sq > mean_example_sq * (1.0 + 1e-4)) {
    bad_argument(function, "g_batch_sq " + number(g_batch_sq) +
                               " exceeds the mean per-example squared norm " +
                               number(mean_example_sq) +
                               ": the squared norm of a batch's mean gradient is at most the mean "
                               "of its examples'; pass the norms of one batch");
  }
}

// An estimate from finite norms that overflows double (norms near 1e308) is refused naming the
// call the user made, not add_estimate, which they did not call.
NoiseEstimate within_range(const char* function, const NoiseEstimate& e) {
  if (!std::isfinite(e.G_sq) || !std::isfinite(e.trace_sigma)) {
    bad_argument(function, "the squared norms overflow double in the estimate (|G|^2 " +
                               number(e.G_sq) + ", tr(Sigma) " + number(e.trace_sigma) +
                               "): rescale them");
  }
  return e;
}

// The window is kept in memory (and in checkpoints): 16 bytes an update. A million updates is
// far past any useful "now" and still 16 MB; more is refused, not attempted.
constexpr std::size_t kMaxWindow = 1000000;

// Mean of per-example squared gradient norms |g_n|^2: [n], n >= 2.
std::pair<double, double> mean_of_norms(const char* function,
                                        py::array_t<double, py::array::forcecast> norms) {
  if (norms.ndim() != 1 || norms.shape(0) < 2) {
    bad_argument(function,
                 "example_sq_norms must be a 1-D sequence of at least 2 per-example "
                 "squared gradient norms");
  }
  const auto view = norms.unchecked<1>();
  double sum = 0.0;
  for (py::ssize_t i = 0; i < view.shape(0); ++i) {
    if (!(view(i) >= 0.0) || !std::isfinite(view(i))) {
      bad_argument(function, "example_sq_norms must be finite and >= 0 (squared norms), got " +
                                 number(view(i)) + " at index " + std::to_string(i));
    }
    sum += view(i);
  }
  const double n = static_cast<double>(view.shape(0));
  return {n, sum / n};
}

// `window`, checked before the tracker allocates it; "now" fits a line through it, and fewer
// than 3 points leave no residual.
std::size_t checked_window(std::size_t window) {
  if (window < 3 || window > kMaxWindow) {
    bad_argument("GradientNoise", "window must be in [3, " + std::to_string(kMaxWindow) +
                                      "] (a line is fitted through the last `window` updates, "
                                      "kept in memory), got " +
                                      std::to_string(window));
  }
  return window;
}

// A batch size from Python: None, or a number. A bool is refused: GradientNoise(True, 256) read
// True as a small batch of 1 example (2026-11-29 note).
std::optional<double> batch_size_arg(const py::object& value, const char* name) {
  if (value.is_none()) return std::nullopt;
  if (py::isinstance<py::bool_>(value))
    bad_argument("GradientNoise", std::string(name) + " is a batch size (examples), got a bool");
  return value.cast<double>();
}

// The tracker with the batch sizes of the two-batch estimator and the estimate to report.
class GradientNoise {
 public:
  GradientNoise(std::optional<double> b_small, std::optional<double> b_big, double ema,
                std::size_t window, const std::string& estimate)
      : b_small_(b_small),
        b_big_(b_big),
        tracker_(ema, checked_window(window)),
        estimate_(check_estimate_kind("GradientNoise", estimate)) {
    if (b_small.has_value() != b_big.has_value()) {
      bad_argument("GradientNoise",
                   "give both b_small and b_big (two-batch), or neither "
                   "(update_per_example / add_estimate only)");
    }
    if (b_small && !(*b_small > 0.0 && *b_big > *b_small && std::isfinite(*b_big))) {
      bad_argument("GradientNoise", "need 0 < b_small < b_big, got b_small=" + number(*b_small) +
                                        ", b_big=" + number(*b_big));
    }
    if (!(ema >= 0.0 && ema < 1.0)) {
      bad_argument("GradientNoise", "ema must be in [0, 1), got " + number(ema));
    }
  }

  // |G_b|^2 (mean over the small batches) and |G_B|^2 of one step.
  NoiseEstimate update(double g_small_sq, double g_big_sq) {
    if (!b_small_) {
      bad_argument("GradientNoise.update",
                   "this GradientNoise was made without b_small and "
                   "b_big: pass them to GradientNoise(b_small, b_big)");
    }
    check_squared_norm("GradientNoise.update", "g_small_sq", g_small_sq);
    check_squared_norm("GradientNoise.update", "g_big_sq", g_big_sq);
    return add(within_range("GradientNoise.update",
                            noise::two_batch_estimate(*b_small_, g_small_sq, *b_big_, g_big_sq)));
  }

  NoiseEstimate update_per_example(py::array_t<double, py::array::forcecast> norms,
                                   double g_batch_sq) {
    const auto [n, mean] = mean_of_norms("GradientNoise.update_per_example", norms);
    check_squared_norm("GradientNoise.update_per_example", "g_batch_sq", g_batch_sq);
    check_batch_within_examples("GradientNoise.update_per_example", mean, g_batch_sq);
    return add(within_range("GradientNoise.update_per_example",
                            noise::per_example_estimate(n, mean, g_batch_sq)));
  }

  NoiseEstimate add(const NoiseEstimate& e) {
    check_finite("GradientNoise.add_estimate", "G_sq", e.G_sq);
    check_finite("GradientNoise.add_estimate", "trace_sigma", e.trace_sigma);
    tracker_.add(e);
    return e;
  }

  NoiseScale scale(const std::optional<std::string>& estimate) const {
    const std::string kind = check_estimate_kind("GradientNoise", estimate.value_or(estimate_));
    return kind == "now" ? tracker_.now() : tracker_.averaged();
  }

  std::optional<double> b_simple(const std::optional<std::string>& estimate) const {
    return value_or_none(scale(estimate).b_simple);
  }

  // (lo, hi): lo >= 0 always (B_simple >= 0); hi None while |G|^2 is not resolved from 0;
  // (None, None) before there are enough updates for an interval.
  std::pair<std::optional<double>, std::optional<double>> ci95(
      const std::optional<std::string>& estimate) const {
    const NoiseScale s = scale(estimate);
    return {value_or_none(s.ci_low), finite_or_none(s.ci_high)};
  }

  std::optional<double> b_small() const { return b_small_; }
  std::optional<double> b_big() const { return b_big_; }
  const std::string& estimate() const { return estimate_; }
  std::int64_t samples() const { return tracker_.averaged().samples; }
  void reset() { tracker_.reset(); }

  // pickle and copy: the settings and the running sums, so a training loop that checkpoints
  // continues its estimate exactly (NoiseScaleTracker::save_state).
  py::tuple get_state() const {
    std::vector<double> sums(tracker_.state_size());
    tracker_.save_state(sums);
    return py::make_tuple(b_small_, b_big_, tracker_.beta(), tracker_.window(), estimate_, sums);
  }
  static GradientNoise from_state(const py::tuple& t) {
    if (t.size() != 6) bad_argument("GradientNoise.__setstate__", "not a GradientNoise's state");
    GradientNoise g(t[0].cast<std::optional<double>>(), t[1].cast<std::optional<double>>(),
                    t[2].cast<double>(), t[3].cast<std::size_t>(), t[4].cast<std::string>());
    const auto sums = t[5].cast<std::vector<double>>();
    const bool whole =
        sums.size() == g.tracker_.state_size() &&
        std::all_of(sums.begin(), sums.end(), [](double x) { return std::isfinite(x); }) &&
        sums[7] >= 0 && sums[7] == std::floor(sums[7]) &&
        sums[8] == static_cast<double>(g.tracker_.window());
    if (!whole) bad_argument("GradientNoise.__setstate__", "the running sums are damaged");
    g.tracker_.load_state(sums);
    return g;
  }

 private:
  std::optional<double> b_small_, b_big_;
  NoiseScaleTracker tracker_;
  std::string estimate_;
};

py::dict scale_dict(const NoiseScale& s) {
  py::dict d;
  d["G_sq"] = value_or_none(s.G_sq);
  d["G_sq_ci95"] = py::make_tuple(value_or_none(s.G_sq_low), value_or_none(s.G_sq_high));
  d["trace_sigma"] = value_or_none(s.trace_sigma);
  d["trace_sigma_ci95"] =
      py::make_tuple(value_or_none(s.trace_sigma_low), value_or_none(s.trace_sigma_high));
  d["b_simple"] = value_or_none(s.b_simple);
  d["ci95"] = py::make_tuple(value_or_none(s.ci_low), finite_or_none(s.ci_high));
  d["resolved"] = s.resolved;
  d["effective_samples"] = s.effective_samples;
  d["samples"] = s.samples;
  return d;
}

py::tuple estimate_tuple(const NoiseEstimate& e) {
  return py::make_tuple(e.G_sq, e.trace_sigma);
}

// The GradientNoise of `self` once its __init__ has run. pybind11 runs a method on an instance
// whose __init__ never ran (GradientNoise.__new__, or a subclass calling one before
// super().__init__()) on memory it allocates unconstructed: add_estimate died of SIGFPE there.
GradientNoise& constructed(const py::object& self) {
  auto* instance = reinterpret_cast<py::detail::instance*>(self.ptr());
  if (!instance->get_value_and_holder().holder_constructed()) {
    throw py::type_error(
        "GradientNoise.__init__ has not run on this object: make it with GradientNoise(...) "
        "(a subclass calls super().__init__(...) before any method)");
  }
  return self.cast<GradientNoise&>();
}

// The stateless estimators: one step's unbiased (|G|^2, tr(Sigma)).
void bind_estimators(py::module_& m) {
  using namespace pybind11::literals;
  m.def(
      "two_batch_estimate",
      [](double b_small, double g_small_sq, double b_big, double g_big_sq) {
        if (!(b_small > 0.0 && b_big > b_small && std::isfinite(b_big))) {
          bad_argument("two_batch_estimate", "need 0 < b_small < b_big, got b_small=" +
                                                 number(b_small) + ", b_big=" + number(b_big));
        }
        check_squared_norm("two_batch_estimate", "g_small_sq", g_small_sq);
        check_squared_norm("two_batch_estimate", "g_big_sq", g_big_sq);
        return estimate_tuple(within_range(
            "two_batch_estimate", noise::two_batch_estimate(b_small, g_small_sq, b_big, g_big_sq)));
      },
      "b_small"_a, "g_small_sq"_a, "b_big"_a, "g_big_sq"_a,
      "One step's unbiased (|G|^2, tr(Sigma)) from |G_b|^2 and |G_B|^2 (McCandlish App. A.1).");
  m.def(
      "per_example_estimate",
      [](py::array_t<double, py::array::forcecast> norms, double g_batch_sq) {
        const auto [n, mean] = mean_of_norms("per_example_estimate", norms);
        check_squared_norm("per_example_estimate", "g_batch_sq", g_batch_sq);
        check_batch_within_examples("per_example_estimate", mean, g_batch_sq);
        return estimate_tuple(
            within_range("per_example_estimate", noise::per_example_estimate(n, mean, g_batch_sq)));
      },
      "example_sq_norms"_a, "g_batch_sq"_a,
      "One batch's unbiased (|G|^2, tr(Sigma)) from its per-example squared gradient norms "
      "|g_n|^2 and the squared norm of their mean.");
}

// GradientNoise: the estimators' running B_simple with its interval.
void bind_gradient_noise(py::module_& m) {
  using namespace pybind11::literals;
  py::class_<GradientNoise>(m, "GradientNoise", R"doc(
Gradient noise scale B_simple = tr(Sigma) / |G|^2 (McCandlish et al. 2018, eq. 2.9).

GradientNoise(b_small, b_big, ema=0.95, window=10, estimate="averaged")
  b_small, b_big: examples in the small and big batch (b_small < b_big); in data parallel
    training a rank's local gradient is the small batch and the averaged one the big batch,
    in one process gradient-accumulation micro-batches are the small batches.
  ema: decay of the bias-corrected EMAs behind "averaged".
  window: updates behind "now" (least-squares lines evaluated at the newest update).
  estimate: what b_simple() and b_simple_ci95() report unless told: "averaged" (smooth,
    lags a B_simple that grows during training) or "now" (current parameters, noisier).
)doc")
      .def(py::init([](const py::object& b_small, const py::object& b_big, double ema,
                       std::size_t window, const std::string& estimate) {
             return GradientNoise(batch_size_arg(b_small, "b_small"),
                                  batch_size_arg(b_big, "b_big"), ema, window, estimate);
           }),
           "b_small"_a = py::none(), "b_big"_a = py::none(), py::kw_only(),
           "ema"_a = NoiseScaleTracker::kDefaultBeta,
           "window"_a = NoiseScaleTracker::kDefaultWindow, "estimate"_a = "averaged")
      .def(
          "update",
          [](const py::object& self, double g_small_sq, double g_big_sq) {
            return estimate_tuple(constructed(self).update(g_small_sq, g_big_sq));
          },
          "g_small_sq"_a, "g_big_sq"_a,
          "Adds one step: |G_b|^2 (mean over the small batches) and |G_B|^2. Returns this step's "
          "unbiased (|G|^2, tr(Sigma)).")
      .def(
          "update_per_example",
          [](const py::object& self, py::array_t<double, py::array::forcecast> norms,
             double g_batch_sq) {
            return estimate_tuple(constructed(self).update_per_example(norms, g_batch_sq));
          },
          "example_sq_norms"_a, "g_batch_sq"_a,
          "Adds one step from per-example squared norms |g_n|^2 and the batch gradient's |G_n|^2.")
      .def(
          "add_estimate",
          [](const py::object& self, double G_sq, double trace_sigma) {
            return estimate_tuple(constructed(self).add({G_sq, trace_sigma}));
          },
          "G_sq"_a, "trace_sigma"_a, "Adds one step's unbiased (|G|^2, tr(Sigma)) as they are.")
      .def(
          "b_simple",
          [](const py::object& self, const std::optional<std::string>& estimate) {
            return constructed(self).b_simple(estimate);
          },
          "estimate"_a = py::none(),
          "B_simple, or None while |G|^2 is not resolved from 0 at 95%, while tr(Sigma)'s "
          "estimate is negative (B_simple >= 0: no value can be read), or with < 2 updates.")
      .def(
          "b_simple_ci95",
          [](const py::object& self, const std::optional<std::string>& estimate) {
            return constructed(self).ci95(estimate);
          },
          "estimate"_a = py::none(),
          "95% Fieller interval (lo, hi): lo >= 0; hi None while unresolved; (None, None) "
          "before an interval exists, or where it lies wholly below 0 (no admissible value).")
      .def(
          "scale",
          [](const py::object& self, const std::optional<std::string>& estimate) {
            return scale_dict(constructed(self).scale(estimate));
          },
          "estimate"_a = py::none(),
          "Everything the estimate knows: G_sq, trace_sigma (None before the window has 3 "
          "updates for \"now\") with their ci95s (G_sq_ci95, trace_sigma_ci95), b_simple, ci95, "
          "resolved, "
          "effective_samples, samples.")
      .def("reset", [](const py::object& self) { constructed(self).reset(); })
      .def(py::pickle([](const py::object& self) { return constructed(self).get_state(); },
                      &GradientNoise::from_state))
      .def_property_readonly("b_small",
                             [](const py::object& self) { return constructed(self).b_small(); })
      .def_property_readonly("b_big",
                             [](const py::object& self) { return constructed(self).b_big(); })
      .def_property_readonly("estimate",
                             [](const py::object& self) { return constructed(self).estimate(); })
      .def_property_readonly("samples",
                             [](const py::object& self) { return constructed(self).samples(); })
      .def("__repr__", [](const py::object& self) {
        const GradientNoise& noise = constructed(self);
        const auto b = noise.b_simple(std::nullopt);
        return "GradientNoise(samples=" + std::to_string(noise.samples()) + ", " +
               noise.estimate() + " b_simple=" + (b ? number(*b) : std::string("None")) + ")";
      });
}

}  // namespace

void bind_noise(py::module_& m) {
  bind_estimators(m);
  bind_gradient_noise(m);
}

}  // namespace lbt::python
