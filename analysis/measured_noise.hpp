// fit.json's measured noise scales beside the fitted B_crit (fit_measurements, sweep_fit.hpp):
// B_simple and B_simple_start from the best trials' readings, B_crit / B_simple, and B_noise
// from their Hessian probes. measured_b_simple and b_crit_over_b_simple, which lbt plan uses
// too, are declared in sweep_fit.hpp.
#pragma once
#include <nlohmann/json.hpp>

#include "analysis/sweep_fit.hpp"

namespace lbt::analysis {

void add_measured_noise(nlohmann::json& fit, const SweepMeasurements& sweep,
                        const FitOptions& options);

}  // namespace lbt::analysis
