// Median, min and max; see spread.hpp.
#include "analysis/spread.hpp"

#include <algorithm>
#include <cstdio>

#include "core/error.hpp"

namespace lbt::analysis {

Spread spread_of(std::vector<double> v) {
  if (v.empty()) throw Error("spread_of: no values");
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return {n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.front(), v.back()};
}

std::string spread_text(const Spread& s, const char* format, bool spread) {
  char text[128];
  const std::string f =
      spread ? std::string(format) + " [" + format + "-" + format + "]" : std::string(format);
  std::snprintf(text, sizeof text, f.c_str(), s.median, s.min, s.max);
  return text;
}

}  // namespace lbt::analysis
