// The spread of repeated measurements where too few, or too unlike a normal sample, for a
// mean and standard error: median, min and max (lbt scaling's repeats, a run's timing windows).
#pragma once

#include <string>
#include <vector>

namespace lbt::analysis {

struct Spread {
  double median = 0.0, min = 0.0, max = 0.0;
};

// Median, min and max of a non-empty list (the median of an even count is the mean of the two
// middle values); throws lbt::Error on an empty one.
Spread spread_of(const std::vector<double>& values);

// "median [min-max]" in `format`, or the median alone where one repeat measured no spread
// (`spread` false: it printed "1.597 [1.597-1.597]", an exact-looking figure from one run).
std::string spread_text(const Spread& s, const char* format, bool spread);

}  // namespace lbt::analysis
