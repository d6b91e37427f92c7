// The environment's kernel choices; see kernel_choice.hpp.
#include "core/kernel_choice.hpp"

#include <array>
#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace lbt {
namespace {

struct Variable {
  KernelChoice choice;
  const char* name;
  std::array<std::string_view, 2> values;  // the default first
};

constexpr std::array<Variable, 3> kVariables = {{
    {KernelChoice::kGemm, "LBT_GEMM", {"onednn", "openblas"}},
    {KernelChoice::kConv, "LBT_CONV", {"onednn", "lbt"}},
    {KernelChoice::kCudnnAlgos, "LBT_CUDNN_ALGOS", {"fixed", "chosen"}},
}};

const Variable& variable(KernelChoice choice) {
  for (const Variable& v : kVariables)
    if (v.choice == choice) return v;
  return kVariables.front();
}

// The variable's value, "" where unset.
std::string_view set_value(const Variable& v) {
  const char* value = std::getenv(v.name);
  return value ? value : "";
}

bool takes(const Variable& v, std::string_view value) {
  return value == v.values[0] || value == v.values[1];
}

}  // namespace

std::string_view kernel_choice(KernelChoice choice) {
  const Variable& v = variable(choice);
  const std::string_view value = set_value(v);
  return takes(v, value) ? value : v.values[0];
}

void check_kernel_choices() {
  for (const Variable& v : kVariables) {
    const std::string_view value = set_value(v);
    if (value.empty() || takes(v, value)) continue;
    throw ConfigError(std::string(v.name) + "=" + std::string(value) +
                          " is not one of its values: " + std::string(v.values[0]) +
                          " (the default) or " + std::string(v.values[1]),
                      "set " + std::string(v.name) + " to one of them, or unset it");
  }
}

}  // namespace lbt
