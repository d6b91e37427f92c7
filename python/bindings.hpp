// One function per bound part of lbt; lbt_module.cpp calls them in order.
#pragma once
#include <pybind11/pybind11.h>

#include <string>

namespace lbt::python {

void bind_noise(pybind11::module_& m);  // GradientNoise, two_batch_estimate, per_example_estimate
void bind_schedule(pybind11::module_& m);  // schedule, recipes
void bind_fit(pybind11::module_& m);       // fit_critical_batch, fit_sweep

// A double as Python would show it in a message: 6 significant digits, no trailing zeros
// (std::to_string gives "-16.000000").
std::string number(double x);

// Raises Python's ValueError "FUNCTION: MESSAGE" (a caller's bad argument, one line).
[[noreturn]] void bad_argument(const std::string& function, const std::string& message);

}  // namespace lbt::python
