// The benchmarks' shared harness: `--key value` arguments, a steady-clock timer, repeated timing
// after a warm-up, throughput over fixed windows, and the median [min-max] every bench reports.
// Header-only, so each bench links only what it measures; its one call into lbt is lbt_core's
// check of the kernel choices (core/kernel_choice.hpp), which every bench links anyway.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/kernel_choice.hpp"

namespace lbt::bench {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Median [min-max] of repeated measurements. The median is the upper one for an even count
// (v[n / 2] of the sorted values), as the benches have always reported it.
struct Stats {
  double median = 0.0, min = 0.0, max = 0.0;
};

inline Stats stats_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

// The mean of the middle two for an even count (noise_overhead's ratios).
inline double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Seconds per call of f: one warm-up call (first touch, state allocation), then `reps` timed.
template <class F>
Stats time_reps(F&& f, int reps) {
  f();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto start = Clock::now();
    f();
    t.push_back(seconds_since(start));
  }
  return stats_of(t);
}

// Examples per second of step(t) (t counts calls from 0) on batches of `batch`: warm up for
// warmup_s and at least min_warmup_steps, then time windows of window_s each until `seconds`
// have passed and at least 5 windows were timed.
struct Windows {
  double warmup_s = 0.3;
  std::int64_t min_warmup_steps = 0;
  double window_s = 0.2;
  double seconds = 2.0;
};

template <class Step>
Stats samples_per_second(Step&& step, std::int64_t batch, const Windows& w) {
  std::int64_t t = 0;
  const auto warm_end = Clock::now() + std::chrono::duration<double>(w.warmup_s);
  while (Clock::now() < warm_end || t < w.min_warmup_steps) step(t++);
  std::vector<double> rates;
  const auto end = Clock::now() + std::chrono::duration<double>(w.seconds);
  while (Clock::now() < end || rates.size() < 5) {
    const auto t0 = Clock::now();
    std::int64_t n = 0;
    while (seconds_since(t0) < w.window_s) step(t++), ++n;
    rates.push_back(static_cast<double>(n * batch) / seconds_since(t0));
  }
  return stats_of(rates);
}

// "32,128,512" -> {32, 128, 512}.
inline std::vector<std::int64_t> parse_list(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoll(item));
  return out;
}

// `--key value` pairs (a later one wins); a bench reads each with its default.
class Args {
 public:
  // Refuses a misspelt LBT_GEMM / LBT_CONV / LBT_CUDNN_ALGOS (exit 2): an on-vs-off run must
  // not time the default twice.
  Args(int argc, char** argv) {
    try {
      check_kernel_choices();
    } catch (const Error& e) {
      std::fprintf(stderr, "error: %s\nhint: %s\n", e.what(), e.hint().c_str());
      std::exit(e.exit_code());
    }
    for (int i = 1; i + 1 < argc; i += 2) values_[argv[i]] = argv[i + 1];
  }
  std::string get(const std::string& key, const std::string& fallback) const {
    asked_.insert(key);
    const auto it = values_.find(key);
    return it == values_.end() ? fallback : it->second;
  }
  std::int64_t get_int(const std::string& key, std::int64_t fallback) const {
    const std::string v = get(key, "");
    return v.empty() ? fallback : std::stoll(v);
  }
  double get_double(const std::string& key, double fallback) const {
    const std::string v = get(key, "");
    return v.empty() ? fallback : std::stod(v);
  }
  // A key given that no get asked for ("" when none), for benches that refuse unknown options.
  std::string unknown() const {
    for (const auto& [key, value] : values_) {
      if (!asked_.count(key)) return key;
    }
    return "";
  }

 private:
  std::map<std::string, std::string> values_;
  mutable std::set<std::string> asked_;
};

}  // namespace lbt::bench
