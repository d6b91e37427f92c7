// The environment's kernel choices; see kernel_choice.hpp.
#include "core/kernel_choice.hpp"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string>

#include "core/error.hpp"

namespace lbt {
namespace {

struct Variable {
  KernelChoice choice;
  const char* name;
  std::array<std::string_view, 4> values;  // the default first; "" past the last
};

constexpr std::array<Variable, 3> kVariables = {{
    {KernelChoice::kGemm, "LBT_GEMM", {"onednn", "openblas"}},
    {KernelChoice::kConv, "LBT_CONV", {"onednn", "lbt"}},
    {KernelChoice::kCudnnAlgos,
     "LBT_CUDNN_ALGOS",
     {"fixed", "chosen", "measured", "nondeterministic"}},
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
  return !value.empty() && std::find(v.values.begin(), v.values.end(), value) != v.values.end();
}

// "a (the default) or b", "a (the default), b or c"
std::string listed(const Variable& v) {
  std::string out = std::string(v.values[0]) + " (the default)";
  for (std::size_t i = 1; i < v.values.size() && !v.values[i].empty(); ++i)
    out += (i + 1 == v.values.size() || v.values[i + 1].empty() ? " or " : ", ") +
           std::string(v.values[i]);
  return out;
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
    throw ConfigError(
        std::string(v.name) + "=" + std::string(value) + " is not one of its values: " + listed(v),
        "set " + std::string(v.name) + " to one of them, or unset it");
  }
}

}  // namespace lbt
