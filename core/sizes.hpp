// Byte and element counts computed from what a user wrote (layer sizes, batch sizes): 64-bit
// products checked for overflow, the machine's memory to compare them with, and a readable
// form. A size past 64 bits or past the machine is refused by its caller with a message naming
// the quantity, before anything is allocated (a bad_alloc names nothing).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace lbt {

// a x b x ...; nullopt where the product (or a factor) is negative or passes int64.
inline std::optional<std::int64_t> checked_product(std::initializer_list<std::int64_t> factors) {
  std::int64_t p = 1;
  for (std::int64_t f : factors) {
    if (f < 0 || __builtin_mul_overflow(p, f, &p)) return std::nullopt;
  }
  return p;
}

// a + b + ...; nullopt where a term is negative or the sum passes int64.
inline std::optional<std::int64_t> checked_sum(std::initializer_list<std::int64_t> terms) {
  std::int64_t s = 0;
  for (std::int64_t t : terms) {
    if (t < 0 || __builtin_add_overflow(s, t, &s)) return std::nullopt;
  }
  return s;
}

// Bytes this machine can hold at most: its RAM plus swap (sysinfo); no process on it can
// allocate more, whatever else runs.
std::int64_t machine_memory_bytes();

// "4.20 TiB", "128 B": powers of 1024.
std::string format_bytes(std::int64_t bytes);

}  // namespace lbt
