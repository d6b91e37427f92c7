// Seeded random streams. Every consumer (init, sampler, dropout, ...) derives its own
// independent stream from (seed, stream id) so adding a consumer never shifts another's draws.
#pragma once
#include <cstdint>
#include <random>

namespace lbt {

// SplitMix64 (Steele, Lea, Flood 2014): a strong 64-bit mixer, used to derive stream seeds.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Named stream ids, so two consumers never share a stream by accident.
enum class RngStream : std::uint64_t {
  kInit = 1,
  kSampler = 2,
  kValidationSplit = 3,
  kDropout = 4,
  kAugment = 5,
  kSweep = 6,
  kSynthetic = 7,
};

using Rng = std::mt19937_64;

inline Rng make_rng(std::uint64_t seed, RngStream stream, std::uint64_t sub = 0) {
  return Rng(splitmix64(splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(stream))) + sub));
}

}  // namespace lbt
