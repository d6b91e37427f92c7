// Median, min and max; see spread.hpp.
#include "analysis/spread.hpp"

#include <algorithm>
#include <cstdio>

#include "analysis/critical_batch.hpp"
#include "core/error.hpp"

namespace lbt::analysis {

Spread spread_of(const std::vector<double>& v) {
  if (v.empty()) throw Error("spread_of: no values");
  const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
  return {median(v), *lo, *hi};
}

std::string spread_text(const Spread& s, const char* format, bool spread) {
  char text[128];
  const std::string f =
      spread ? std::string(format) + " [" + format + "-" + format + "]" : std::string(format);
  std::snprintf(text, sizeof text, f.c_str(), s.median, s.min, s.max);
  return text;
}

}  // namespace lbt::analysis
