// A double as the shortest text that reads back as the same double (std::to_chars): "0.1", not
// "0.10000000000000001" (%.17g) nor "0.100000" (std::to_string). For values written to be read
// again, or named as written: a trial's LR, a label in an error message.
#pragma once
#include <charconv>
#include <string>

namespace lbt {

inline std::string shortest_text(double v) {
  char buf[32];
  return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
}

}  // namespace lbt
