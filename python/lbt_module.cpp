// The `lbt._lbt` extension: the Python face of lbt's C++ estimators, schedules and fits
// (pybind11). Each part binds in its own file (bind_noise.cpp, bind_schedule.cpp,
// bind_fit.cpp); python/lbt/__init__.py re-exports them with the run-directory readers.
#include <pybind11/pybind11.h>

#include <sstream>
#include <string>

#include "core/cpu_path.hpp"
#include "core/error.hpp"
#include "python/bindings.hpp"

namespace py = pybind11;

namespace {

// lbt::Error carries a hint; Python gets both on one line, as `lbt` prints "error:"/"hint:".
std::string with_hint(const lbt::Error& e) {
  return e.hint().empty() ? std::string(e.what())
                          : std::string(e.what()) + " (hint: " + e.hint() + ")";
}

void register_errors(py::module_& m) {
  // lbt.Error is a ValueError: every lbt error is about what the caller passed (a config, a
  // directory, numbers), so `except ValueError` catches them without importing lbt's class.
  static py::exception<lbt::Error> error(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const lbt::Error& e) {
      error(with_hint(e).c_str());
    }
  });
}

}  // namespace

namespace lbt::python {

std::string number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

void bad_argument(const std::string& function, const std::string& message) {
  throw py::value_error(function + ": " + message);
}

}  // namespace lbt::python

PYBIND11_MODULE(_lbt, m) {
  // A refused LBT_CPU ended the interpreter at the library's load (core/cpu_path.cpp).
  if (!lbt::cpu_path_refusal().empty()) throw py::import_error(lbt::cpu_path_refusal());
  m.doc() = "lbt: gradient noise scale, LR schedules and the critical-batch fit, in C++";
  register_errors(m);
  lbt::python::bind_noise(m);
  lbt::python::bind_schedule(m);
  lbt::python::bind_fit(m);
}
