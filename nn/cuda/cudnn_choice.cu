// How CudnnConv2d chooses cuDNN's algorithms (cudnn_parts.hpp). LBT_CUDNN_ALGOS=fixed (the
// default) keeps implicit GEMM forward and algorithm 1 for both backward passes, which the
// self-check compares with the CPU. LBT_CUDNN_ALGOS=chosen takes, per layer, batch size and
// pass, the first deterministic one cuDNN's heuristics rank (no timing, so every process on a
// device chooses the same ones and runs repeat bit for bit) that agrees with the fixed one on
// random data; LBT_CUDNN_ALGOS=nondeterministic the same among all ranked, nondeterministic ones
// included (what PyTorch runs unless told to be deterministic; runs then differ at round-off).
// LBT_CUDNN_ALGOS=measured ranks the deterministic ones by cuDNN's own timing on this device
// (cudnnFind*, as PyTorch's cudnn.benchmark): the heuristics put algorithm 1 first for the simple
// CNN's filter gradients (0.7 ms each at batch 512 on an H200, where PyTorch's Winograd took 0.08
// ms). Timings vary, so two machines may choose differently; on one, the first choice is cached
// (choose_algorithms) and later runs take it, so they repeat bit for bit.
// Fixed is the default: on an H200 (2026-11-27, before the cache) the choice and its vetting
// cost about 1 s at every start of a run, and changed the simple CNN's step by -4%, +17% and +2%
// at batch 32, 128 and 512 (two runs each): a sweep's short trials lost more than they gained.
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/cuda/check.cuh"
#include "core/cuda/gpu.hpp"
#include "core/error.hpp"
#include "core/file_cache.hpp"
#include "core/kernel_choice.hpp"
#include "nn/cuda/cudnn_parts.hpp"

namespace lbt::nn::cuda::cudnn_parts {

using lbt::cuda::check;
using lbt::cuda::DeviceArray;

namespace {

// An algorithm whose workspace is larger is passed over: 1 GiB, or a 64th of the device's memory
// where that is less, so a sweep's 16 trials on one GPU hold at most a quarter of it in
// workspaces (one a process: shared_workspace). The cap was 64 MiB until 2026-11-28, while each
// convolution held its own: the FFT algorithms, which PyTorch runs for the simple CNN at batch 512
// (its profile on an H200, 2026-11-27), need more there.
std::size_t workspace_cap() {
  static const std::size_t cap =
      std::min(std::size_t{1} << 30, lbt::cuda::device_memory_bytes() / 64);
  return cap;
}

// A chosen algorithm is kept when it agrees with the fixed one to this much of the largest
// value: float32 sums in another order differ by ~1e-6 of it; a wrong kernel by far more.
constexpr double kVetTolerance = 1e-4;

// cuDNN's ranked candidates for one pass (fastest expected first) that run in FMA math (no TF32:
// the CPU comparison holds to float32 round-off), fit the workspace cap and, unless
// `any_determinism`, are deterministic. Perf is cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t.
template <class Perf>
auto eligible(const Perf* ranked, int count, bool any_determinism) {
  std::vector<decltype(ranked->algo)> out;
  for (int i = 0; i < count; ++i) {
    const Perf& p = ranked[i];
    if (p.status == CUDNN_STATUS_SUCCESS &&
        (any_determinism || p.determinism == CUDNN_DETERMINISTIC) && p.mathType == CUDNN_FMA_MATH &&
        p.memory <= workspace_cap())
      out.push_back(p.algo);
  }
  return out;
}

// Each pass's eligible algorithms in cuDNN's order: its heuristics' (no timing: every process on
// one device and library ranks alike) or, `measure`, its timing of each on this device.
struct Candidates {
  std::vector<cudnnConvolutionFwdAlgo_t> forward;
  std::vector<cudnnConvolutionBwdDataAlgo_t> backward_data;
  std::vector<cudnnConvolutionBwdFilterAlgo_t> backward_filter;
  std::string ranking;  // every pass's whole ranking (ranking_text), for reports
};

// One pass's ranking as cuDNN returned it, for reports: "1 0.702 ms 0 MiB, 5 0.081 ms 97 MiB
// over the cap, ..." with what keeps each from being a candidate; a time where cuDNN measured
// one (measured), none from its heuristics.
template <class Perf>
std::string ranking_text(const Perf* ranked, int count) {
  std::string out;
  char item[64];
  for (int i = 0; i < count; ++i) {
    const Perf& p = ranked[i];
    out += (i ? ", " : "") + std::to_string(static_cast<int>(p.algo));
    if (p.status != CUDNN_STATUS_SUCCESS) {
      out += " failed";
      continue;
    }
    if (p.time > 0) {
      std::snprintf(item, sizeof item, " %.3f ms", static_cast<double>(p.time));
      out += item;
    }
    std::snprintf(item, sizeof item, " %.0f MiB", static_cast<double>(p.memory) / (1 << 20));
    out += item;
    if (p.determinism != CUDNN_DETERMINISTIC) out += " nondeterministic";
    if (p.mathType != CUDNN_FMA_MATH) out += " not FMA";
    if (p.memory > workspace_cap()) out += " over the cap";
  }
  return out;
}

Candidates ranked_candidates(const Descriptors& d, bool any_determinism, bool measure) {
  Candidates c;
  int count = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  check((measure ? cudnnFindConvolutionForwardAlgorithm : cudnnGetConvolutionForwardAlgorithm_v7)(
            d.handle, d.x, d.w, d.conv, d.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, fwd),
        "ranking the forward algorithms");
  c.forward = eligible(fwd, count, any_determinism);
  c.ranking = "fwd " + ranking_text(fwd, count);
  cudnnConvolutionBwdDataAlgoPerf_t data[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
  check((measure ? cudnnFindConvolutionBackwardDataAlgorithm
                 : cudnnGetConvolutionBackwardDataAlgorithm_v7)(
            d.handle, d.w, d.y, d.conv, d.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, data),
        "ranking the data-gradient algorithms");
  c.backward_data = eligible(data, count, any_determinism);
  c.ranking += "; bwd data " + ranking_text(data, count);
  cudnnConvolutionBwdFilterAlgoPerf_t filter[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
  check(
      (measure ? cudnnFindConvolutionBackwardFilterAlgorithm
               : cudnnGetConvolutionBackwardFilterAlgorithm_v7)(
          d.handle, d.x, d.y, d.conv, d.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, filter),
      "ranking the filter-gradient algorithms");
  c.backward_filter = eligible(filter, count, any_determinism);
  c.ranking += "; bwd filter " + ranking_text(filter, count);
  return c;
}

DeviceArray<float> random_array(std::size_t n, std::mt19937& gen) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> host(n);
  for (float& v : host) v = u(gen);
  return DeviceArray<float>{std::span<const float>(host)};
}

// max |a - b| within kVetTolerance of max |b| (a NaN fails).
bool nearly_equal(const DeviceArray<float>& a, const DeviceArray<float>& b) {
  const std::vector<float> ha = a.download(), hb = b.download();
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < ha.size(); ++i) {
    const double e = std::fabs(static_cast<double>(ha[i]) - hb[i]);
    diff = std::isnan(e) ? INFINITY : std::max(diff, e);
    scale = std::max(scale, std::fabs(static_cast<double>(hb[i])));
  }
  return diff <= kVetTolerance * scale;
}

// The workspace the fixed algorithms and every candidate fit in (each within the cap).
std::size_t candidates_workspace(const Descriptors& d, const Candidates& c) {
  std::size_t bytes = workspace_bytes(d, Algorithms{});
  const std::size_t n =
      std::max({c.forward.size(), c.backward_data.size(), c.backward_filter.size()});
  for (std::size_t i = 0; i < n; ++i) {
    Algorithms a;
    if (i < c.forward.size()) a.forward = c.forward[i];
    if (i < c.backward_data.size()) a.backward_data = c.backward_data[i];
    if (i < c.backward_filter.size()) a.backward_filter = c.backward_filter[i];
    bytes = std::max(bytes, workspace_bytes(d, a));
  }
  return bytes;
}

// The first of `ranked` whose pass (`pass(algorithms, out)`, `size` floats out) agrees with the
// fixed algorithm's to kVetTolerance of its largest value; the fixed one where it comes first
// (those after it are ranked slower) or none agrees. `member` is the pass's field of Algorithms.
// Each one passed over is added to `rejected` ("bwd filter 5"): transforms (Winograd, FFT) round
// off more than sums in another order do, the usual reason.
template <class Algo, class Pass>
Algo first_agreeing(const std::vector<Algo>& ranked, Algo Algorithms::*member, const char* name,
                    std::size_t size, Pass pass, std::string& rejected) {
  const Algorithms fixed;
  DeviceArray<float> theirs(size), mine(size);
  pass(fixed, theirs.data());
  for (const Algo algo : ranked) {
    if (algo == fixed.*member) break;
    Algorithms candidate;
    candidate.*member = algo;
    try {  // a candidate cuDNN ranked but cannot run here is passed over, not the run's end
      pass(candidate, mine.data());
    } catch (const DeviceError&) {
      rejected += std::string(" ") + name + " " + std::to_string(algo) + " (failed to run)";
      continue;
    }
    if (nearly_equal(mine, theirs)) return algo;
    rejected += std::string(" ") + name + " " + std::to_string(algo);
  }
  return fixed.*member;
}

// Per pass, the first candidate that agrees with the fixed algorithm on the same random x, W and
// dy (before 2026-11-27 the first candidate only, the fixed one where it did not agree: the
// simple CNN's second convolution at B = 128 lost Winograd's filter gradient and with it every
// faster deterministic one). What was passed over is said on stderr.
Algorithms vetted(Descriptors& d, const Candidates& c) {
  const Algorithms fixed;
  auto leads = [](const auto& ranked, auto algo) { return ranked.empty() || ranked[0] == algo; };
  if (leads(c.forward, fixed.forward) && leads(c.backward_data, fixed.backward_data) &&
      leads(c.backward_filter, fixed.backward_filter))
    return fixed;
  std::mt19937 gen(20261127);
  const DeviceArray<float> x = random_array(d.x_size, gen), w = random_array(d.w_size, gen),
                           dy = random_array(d.y_size, gen);
  std::string rejected;
  Algorithms chosen;
  chosen.forward = first_agreeing(
      c.forward, &Algorithms::forward, "fwd", d.y_size,
      [&](const Algorithms& a, float* out) { forward_pass(d, a, x.data(), w.data(), out); },
      rejected);
  chosen.backward_data = first_agreeing(
      c.backward_data, &Algorithms::backward_data, "bwd data", d.x_size,
      [&](const Algorithms& a, float* out) { data_pass(d, a, w.data(), dy.data(), out); },
      rejected);
  chosen.backward_filter = first_agreeing(
      c.backward_filter, &Algorithms::backward_filter, "bwd filter", d.w_size,
      [&](const Algorithms& a, float* out) { filter_pass(d, a, x.data(), dy.data(), 0.0f, out); },
      rejected);
  if (!rejected.empty())
    std::fprintf(stderr,
                 "lbt: cuDNN's algorithms%s round off beyond %.0e of the fixed ones on this "
                 "convolution; the next ranked ones that do not (or the fixed ones) are used\n",
                 rejected.c_str(), kVetTolerance);
  return chosen;
}

// What a choice stands for in the cache (core/file_cache.hpp): the mode, the device and the
// libraries, the convolution and the rule it was vetted by. Not lbt's build: cuDNN's algorithms
// compute every pass, the fixed ones included.
std::string choice_key(std::string_view mode, const std::string& convolution) {
  char rule[80];
  std::snprintf(rule, sizeof rule, "vetted to %.0e, workspace cap %zu MiB", kVetTolerance,
                workspace_cap() >> 20);
  return "cuDNN " + std::string(mode) + " | " + lbt::cuda::describe_device() + " | " +
         lbt::cuda::library_versions() + " | " + convolution + " | " + rule;
}

// The cached text: "FWD BWD_DATA BWD_FILTER" on one line, then the ranking they came from.
std::string cache_text(const Algorithms& a, const std::string& ranking) {
  return std::to_string(a.forward) + " " + std::to_string(a.backward_data) + " " +
         std::to_string(a.backward_filter) + "\n" + ranking;
}

// Takes a cached choice when its text names algorithms cuDNN knows and can size here; false
// (nothing changed) otherwise, and the choice is made again.
bool take_cached(Descriptors& d, const std::string& text) {
  int fwd = -1, data = -1, filter = -1, used = 0;
  if (std::sscanf(text.c_str(), "%d %d %d\n%n", &fwd, &data, &filter, &used) != 3 || used == 0 ||
      fwd < 0 || fwd >= CUDNN_CONVOLUTION_FWD_ALGO_COUNT || data < 0 ||
      data >= CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT || filter < 0 ||
      filter >= CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT)
    return false;
  Algorithms a;
  a.forward = static_cast<cudnnConvolutionFwdAlgo_t>(fwd);
  a.backward_data = static_cast<cudnnConvolutionBwdDataAlgo_t>(data);
  a.backward_filter = static_cast<cudnnConvolutionBwdFilterAlgo_t>(filter);
  std::size_t bytes = 0;
  try {
    bytes = workspace_bytes(d, a);
  } catch (const DeviceError&) {
    return false;
  }
  d.workspace_size = bytes;
  d.algorithms = a;
  d.ranking = "cached: " + text.substr(static_cast<std::size_t>(used));
  return true;
}

// The choices kept on disk, the least recently used removed past it: one per mode, device,
// libraries and convolution shape (each batch size a shape), a few hundred bytes each.
constexpr std::size_t kCachedChoices = 1024;

}  // namespace

// The fixed algorithms, or (LBT_CUDNN_ALGOS=chosen, measured or nondeterministic) the ranked,
// vetted ones; the workspace they need. A choice made once on a device is cached on disk
// (choice_key): the ranking (cudnnFind's timing, for measured) and the vetting cost about a
// second at each start, which every trial of a sweep paid before 2026-11-28; and a measured
// choice, which timing noise may change, is then the same in every run.
void choose_algorithms(Descriptors& d, const std::string& convolution) {
  Candidates candidates;
  std::size_t bytes = workspace_bytes(d, Algorithms{});
  // A cuDNN that will not rank or size its algorithms (an older library, an odd shape) leaves
  // the fixed ones, which ran before; such queries change no GPU state.
  const std::string_view choice = kernel_choice(KernelChoice::kCudnnAlgos);
  const std::string key = choice == "fixed" ? "" : choice_key(choice, convolution);
  if (!key.empty()) {
    if (const auto cached = file_cache::find("cudnn-algos", key); cached && take_cached(d, *cached))
      return;
    try {
      candidates = ranked_candidates(d, choice == "nondeterministic", choice == "measured");
      bytes = candidates_workspace(d, candidates);
    } catch (const DeviceError& e) {
      std::fprintf(stderr,
                   "lbt: cuDNN's ranking of its algorithms failed (%s); using the fixed ones\n",
                   e.what());
      candidates = {};
    }
  }
  d.workspace_size = bytes;  // every candidate's, while they are vetted
  try {
    d.algorithms = vetted(d, candidates);
  } catch (const DeviceError& e) {  // e.g. the largest candidate's workspace does not fit now
    std::fprintf(stderr, "lbt: vetting cuDNN's algorithms failed (%s); using the fixed ones\n",
                 e.what());
    candidates = {};
    d.algorithms = Algorithms{};
  }
  d.ranking = candidates.ranking;
  d.workspace_size = workspace_bytes(d, d.algorithms);
  if (key.empty() || d.ranking.empty()) return;  // fixed, or the fallback: nothing to cache
  // A process that stored its choice while this one measured (a sweep's trial, another rank)
  // wins: timing noise can make two measured choices differ, and a rerun must take the one its
  // run used (the last writer's replaced it; 2026-11-30 review).
  if (const auto cached = file_cache::find("cudnn-algos", key); cached && take_cached(d, *cached))
    return;
  file_cache::store("cudnn-algos", key, cache_text(d.algorithms, d.ranking), kCachedChoices);
}

}  // namespace lbt::nn::cuda::cudnn_parts
