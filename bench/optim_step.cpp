// Optimizer step time over flat buffers (SGD momentum, AdamW, LARS, LAMB; fused and reference)
// as effective memory bandwidth, next to a parallel memcpy and a STREAM triad (McCalpin) of the
// same array size measured in the same run, and as "%copy paired": the kernel's bandwidth over
// a memcpy timed just before it in each repetition (median [min-max] over repetitions). Bytes
// follow STREAM counting: each array an algorithm must read counts once, each it must write once
// (SGD/LARS 5 x 4N, AdamW/LAMB 7 x 4N).
// Usage: optim_step [--sizes 1000000,10000000,100000000] [--threads 2] [--reps 7] [--segments 10]
//                   [--reference-max 10000000]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "core/config.hpp"
#include "core/gemm.hpp"
#include "optim/reference/reference.hpp"

using namespace lbt;

namespace {

using Timing = bench::Stats;  // seconds
using bench::Clock;

// Kernel bandwidth over memcpy bandwidth with the two timed back to back in each repetition,
// median [min-max] over repetitions: on a shared machine a memcpy timed seconds apart from the
// kernel may have run under a different load (the 1M memcpy median alone swung 0.045-0.11 ms).
using PairedRatio = bench::Stats;

template <class Copy, class Kernel>
PairedRatio paired_ratio(Copy&& copy, Kernel&& kernel, double copy_bytes, double kernel_bytes,
                         int reps) {
  copy();
  kernel();
  std::vector<double> ratios;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    copy();
    auto t1 = Clock::now();
    kernel();
    auto t2 = Clock::now();
    const double copy_s = std::chrono::duration<double>(t1 - t0).count();
    const double kernel_s = std::chrono::duration<double>(t2 - t1).count();
    ratios.push_back((kernel_bytes / kernel_s) / (copy_bytes / copy_s));
  }
  return bench::stats_of(ratios);
}

void row(const char* what, std::size_t n, double bytes, Timing t, double copy_bw, double triad_bw,
         const PairedRatio* paired = nullptr) {
  const double bw = bytes / t.median / 1e9;
  std::printf("| %-16s | %9zu | %8.3f [%.3f-%.3f] | %6.1f [%5.1f-%5.1f] | %4.0f%% | %4.0f%% |",
              what, n, t.median * 1e3, t.min * 1e3, t.max * 1e3, bw, bytes / t.max / 1e9,
              bytes / t.min / 1e9, 100 * bw / copy_bw, 100 * bw / triad_bw);
  if (paired)
    std::printf(" %4.0f%% [%3.0f-%3.0f] |\n", 100 * paired->median, 100 * paired->min,
                100 * paired->max);
  else
    std::printf("                  |\n");
}

struct Settings {
  std::vector<std::size_t> sizes;
  int threads, reps, num_segments;
  std::size_t reference_max;
};

void print_header(const Settings& o) {
  std::printf("threads=%d reps=%d (median [min-max] after 1 warm-up) segments=%d\n\n", o.threads,
              o.reps, o.num_segments);
  std::printf(
      "| kernel           |    params | ms/step               | GB/s [min-max]       | %%copy | "
      "%%triad | %%copy paired     |\n");
  std::printf(
      "|------------------|-----------|-----------------------|----------------------|-------|-----"
      "---|------------------|\n");
}

// `num_segments` equal weight tensors over n floats.
std::vector<Segment> equal_segments(std::size_t n, int num_segments) {
  std::vector<Segment> segments;
  for (int s = 0; s < num_segments; ++s) {
    const std::size_t begin = n * s / num_segments, end = n * (s + 1) / num_segments;
    segments.push_back(make_segment("layer" + std::to_string(s) + ".weight", begin, end - begin,
                                    ParamKind::kWeight));
  }
  return segments;
}

// Every optimizer, fused and (up to reference_max floats) reference, at n floats, as rows
// beside the memcpy and triad baselines over the same n.
void bench_size(std::size_t n, const Settings& o) {
  const std::vector<std::pair<std::string, double>> optimizers = {
      {"momentum", 5}, {"adamw", 7}, {"lars", 5}, {"lamb", 7}};
  AlignedBuffer params(n), grads(n), a(n);
  const std::vector<Segment> segments = equal_segments(n, o.num_segments);
#pragma omp parallel for schedule(static)
  for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) {
    params[i] = 0.01f * float((i * 7919) % 201 - 100);
    grads[i] = 0.001f * float((i * 104729) % 199 - 99);
    a[i] = 0.0f;
  }
  // Baselines over the same n floats: memcpy (2 x 4N bytes) and triad a = b + s c (3 x 4N).
  const float* b = params.data();
  const float* c = grads.data();
  float* out = a.data();
  auto do_copy = [&] {
#pragma omp parallel
    {
      const std::size_t t = omp_get_thread_num(), T = omp_get_num_threads();
      const std::size_t lo = n * t / T, hi = n * (t + 1) / T;
      std::memcpy(out + lo, b + lo, (hi - lo) * sizeof(float));
    }
  };
  Timing copy = bench::time_reps(do_copy, o.reps);
  Timing triad = bench::time_reps(
      [&] {
#pragma omp parallel for simd schedule(static)
        for (std::ptrdiff_t i = 0; i < std::ptrdiff_t(n); ++i) out[i] = b[i] + 0.5f * c[i];
      },
      o.reps);
  const double copy_bw = 8.0 * n / copy.median / 1e9, triad_bw = 12.0 * n / triad.median / 1e9;
  row("memcpy", n, 8.0 * n, copy, copy_bw, triad_bw);
  row("triad", n, 12.0 * n, triad, copy_bw, triad_bw);
  for (const auto& [name, arrays] : optimizers) {
    for (bool reference : {false, true}) {
      if (reference && n > o.reference_max) continue;
      Config config = Config::from_string("[optimizer]\nname='" + name + "'\n");
      const optim::OptimizerOptions options = optim::read_optimizer_options(config);
      auto opt = reference ? optim::reference::make_reference_optimizer(options, n)
                           : optim::make_optimizer(options, n);
      std::int64_t step = 0;
      auto do_step = [&] { opt->step({params.span(), grads.span(), segments, 1e-4, step++}); };
      const int kernel_reps = reference ? std::max(3, o.reps / 2) : o.reps;
      Timing t = bench::time_reps(do_step, kernel_reps);
      const PairedRatio paired =
          paired_ratio(do_copy, do_step, 8.0 * n, 4.0 * arrays * n, kernel_reps);
      row((name + (reference ? " (ref)" : " (fused)")).c_str(), n, 4.0 * arrays * n, t, copy_bw,
          triad_bw, &paired);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args args(argc, argv);
  Settings o;
  for (std::int64_t n : bench::parse_list(args.get("--sizes", "1000000,10000000,100000000")))
    o.sizes.push_back(static_cast<std::size_t>(n));
  o.threads = static_cast<int>(args.get_int("--threads", 2));
  o.reps = static_cast<int>(args.get_int("--reps", 7));
  o.num_segments = static_cast<int>(args.get_int("--segments", 10));
  o.reference_max = static_cast<std::size_t>(args.get_int("--reference-max", 10000000));
  if (const std::string unknown = args.unknown(); !unknown.empty()) {
    std::fprintf(stderr, "unknown option %s\n", unknown.c_str());
    return 2;
  }
  set_num_threads(o.threads);
  print_header(o);
  for (std::size_t n : o.sizes) bench_size(n, o);
  return 0;
}
