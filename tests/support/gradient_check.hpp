// Finite-difference gradient checking (Caffe's GradientChecker, flashlight's jacobianTestImpl):
// central differences of a scalar function, compared with the analytic gradient using a
// relative error with floor 1 in the denominator.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

namespace lbt::test {

struct GradCheckResult {
  double max_error = 0.0;
  std::size_t worst_index = 0;
  double worst_analytic = 0.0, worst_numeric = 0.0;
};

// f: evaluates the scalar loss at the current values of x[0..n). analytic: dloss/dx.
template <class T>
GradCheckResult check_gradient(T* x, std::size_t n, const std::function<double()>& f,
                               const T* analytic, double step) {
  GradCheckResult r;
  for (std::size_t i = 0; i < n; ++i) {
    const T saved = x[i];
    x[i] = saved + static_cast<T>(step);
    const double up = f();
    x[i] = saved - static_cast<T>(step);
    const double down = f();
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * step);
    const double a = static_cast<double>(analytic[i]);
    const double err = std::abs(a - numeric) / std::max({1.0, std::abs(a), std::abs(numeric)});
    if (err > r.max_error) r = {err, i, a, numeric};
  }
  return r;
}

}  // namespace lbt::test
