// The machine's memory and byte formatting; see sizes.hpp.
#include "core/sizes.hpp"

#include <sys/sysinfo.h>

#include <cmath>
#include <cstdio>

namespace lbt {

std::int64_t machine_memory_bytes() {
  struct sysinfo info {};
  if (sysinfo(&info) != 0) return INT64_MAX;  // unknown: nothing is refused for it
  const auto unit = static_cast<std::int64_t>(info.mem_unit);
  const auto total =
      static_cast<std::int64_t>(info.totalram) + static_cast<std::int64_t>(info.totalswap);
  return checked_product({total, unit}).value_or(INT64_MAX);
}

std::string format_bytes(std::int64_t bytes) {
  static const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int i = 0;
  while (std::abs(v) >= 1024.0 && i < 6) v /= 1024.0, ++i;
  char buf[32];
  std::snprintf(buf, sizeof buf, i == 0 ? "%.0f %s" : "%.2f %s", v, kNames[i]);
  return buf;
}

}  // namespace lbt
