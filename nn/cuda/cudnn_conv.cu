// CudnnConv2d: cuDNN's convolution (the legacy descriptor API of cuDNN 9) with fixed
// deterministic algorithms (implicit GEMM forward, algorithm 1 for both backward passes), which
// the self-check compares with the CPU. LBT_CUDNN_ALGOS=chosen takes, per layer, batch size and
// pass, the first deterministic one cuDNN's heuristics rank (no timing, so every process on a
// device chooses the same ones and runs repeat bit for bit) that agrees with the fixed one on
// random data; LBT_CUDNN_ALGOS=nondeterministic the same among all ranked, nondeterministic ones
// included (what PyTorch runs unless told to be deterministic; runs then differ at round-off).
// LBT_CUDNN_ALGOS=measured ranks the deterministic ones by cuDNN's own timing on this device
// (cudnnFind*, as PyTorch's cudnn.benchmark): the heuristics put algorithm 1 first for the simple
// CNN's filter gradients (0.7 ms each at batch 512 on an H200, where PyTorch's Winograd took 0.08
// ms). Timings vary, so two processes may choose differently: each run is deterministic, two runs
// may differ at round-off.
// Fixed is the default: on an H200 (2026-11-27) the choice and its vetting cost about 1 s at
// every start of a run, and changed the simple CNN's step by -4%, +17% and +2% at batch 32,
// 128 and 512 (two runs each): a sweep's short trials lose more than they gain.
#include <cudnn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "core/cuda/check.cuh"
#include "core/error.hpp"
#include "core/kernel_choice.hpp"
#include "nn/cuda/batch_norm.hpp"
#include "nn/cuda/cudnn_conv.hpp"

namespace lbt::nn::cuda {

using lbt::cuda::check;
using lbt::cuda::DeviceArray;

namespace {

struct Algorithms {
  cudnnConvolutionFwdAlgo_t forward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t backward_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  cudnnConvolutionBwdFilterAlgo_t backward_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  bool operator==(const Algorithms&) const = default;
};

// An algorithm whose workspace is larger is passed over: a small model's layer should not
// take GPU memory a sweep's concurrent trials need.
constexpr std::size_t kMaxWorkspaceBytes = std::size_t{64} << 20;

// A chosen algorithm is kept when it agrees with the fixed one to this much of the largest
// value: float32 sums in another order differ by ~1e-6 of it; a wrong kernel by far more.
constexpr double kVetTolerance = 1e-4;

}  // namespace

struct CudnnConv2d::Descriptors {
  cudnnHandle_t handle = nullptr;  // the process's (process_handle)
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Algorithms algorithms;
  std::string ranking;  // cuDNN's rankings they were chosen from ("" for the fixed ones)
  DeviceArray<float> workspace;
  DeviceArray<double> bias_partials;  // the bias gradient's per-block sums (channel_sums)
  std::int64_t batch = 0;
  std::size_t x_size = 0, w_size = 0, y_size = 0;  // elements at this batch size
};

namespace {

using Descriptors = CudnnConv2d::Descriptors;

// One cuDNN handle for the process, made at its first convolution: cudnnCreate loads cuDNN's
// kernels and takes device memory, and before 2026-11-27 every convolution (per layer and batch
// size: a ResNet-20's 19 at two or three batch sizes) made its own. A process uses one device
// and the default stream. Never destroyed: the driver frees it with the process (a static's
// destructor could run after the CUDA context is gone).
cudnnHandle_t process_handle() {
  static const cudnnHandle_t handle = [] {
    cudnnHandle_t h = nullptr;
    check(cudnnCreate(&h), "cudnnCreate");
    return h;
  }();
  return handle;
}

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
        p.memory <= kMaxWorkspaceBytes)
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
    if (p.memory > kMaxWorkspaceBytes) out += " over the cap";
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

std::size_t workspace_bytes(const Descriptors& d, const Algorithms& a) {
  std::size_t fwd = 0, bwd_data = 0, bwd_filter = 0;
  check(cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, a.forward, &fwd),
        "cudnnGetConvolutionForwardWorkspaceSize");
  check(cudnnGetConvolutionBackwardDataWorkspaceSize(d.handle, d.w, d.y, d.conv, d.x,
                                                     a.backward_data, &bwd_data),
        "cudnnGetConvolutionBackwardDataWorkspaceSize");
  check(cudnnGetConvolutionBackwardFilterWorkspaceSize(d.handle, d.x, d.y, d.conv, d.w,
                                                       a.backward_filter, &bwd_filter),
        "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  return std::max({fwd, bwd_data, bwd_filter});
}

void forward_pass(Descriptors& d, const Algorithms& a, const float* x, const float* w, float* y) {
  const float one = 1.0f, zero = 0.0f;
  check(cudnnConvolutionForward(d.handle, &one, d.x, x, d.w, w, d.conv, a.forward,
                                d.workspace.data(), d.workspace.size() * 4, &zero, d.y, y),
        "cudnnConvolutionForward");
}

void filter_pass(Descriptors& d, const Algorithms& a, const float* x, const float* dy, float beta,
                 float* dw) {
  const float one = 1.0f;
  check(cudnnConvolutionBackwardFilter(d.handle, &one, d.x, x, d.y, dy, d.conv, a.backward_filter,
                                       d.workspace.data(), d.workspace.size() * 4, &beta, d.w, dw),
        "cudnnConvolutionBackwardFilter");
}

void data_pass(Descriptors& d, const Algorithms& a, const float* w, const float* dy, float* dx) {
  const float one = 1.0f, zero = 0.0f;
  check(cudnnConvolutionBackwardData(d.handle, &one, d.w, w, d.y, dy, d.conv, a.backward_data,
                                     d.workspace.data(), d.workspace.size() * 4, &zero, d.x, dx),
        "cudnnConvolutionBackwardData");
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
    pass(candidate, mine.data());
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

// The fixed algorithms, or (LBT_CUDNN_ALGOS=chosen, measured or nondeterministic) the ranked,
// vetted ones; the workspace they need.
void choose_algorithms(Descriptors& d) {
  Candidates candidates;
  std::size_t bytes = workspace_bytes(d, Algorithms{});
  // A cuDNN that will not rank or size its algorithms (an older library, an odd shape) leaves
  // the fixed ones, which ran before; such queries change no GPU state.
  const std::string_view choice = kernel_choice(KernelChoice::kCudnnAlgos);
  if (choice != "fixed") {
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
  d.workspace = DeviceArray<float>((bytes + 3) / 4);
  d.algorithms = vetted(d, candidates);
  d.ranking = candidates.ranking;
  const std::size_t needed = workspace_bytes(d, d.algorithms);
  if (needed < bytes) d.workspace = DeviceArray<float>((needed + 3) / 4);
}

void set_nchw(cudnnTensorDescriptor_t d, std::int64_t n, Shape3 s) {
  check(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(n),
                                   static_cast<int>(s.c), static_cast<int>(s.h),
                                   static_cast<int>(s.w)),
        "cudnnSetTensor4dDescriptor");
}

}  // namespace

CudnnConv2d::CudnnConv2d(Shape3 in, const Conv2dOptions& o, std::int64_t batch)
    : d_(std::make_unique<Descriptors>()), in_(in) {
  Descriptors& d = *d_;
  d.handle = process_handle();
  check(cudnnCreateTensorDescriptor(&d.x), "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&d.y), "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&d.bias), "cudnnCreateTensorDescriptor");
  check(cudnnCreateFilterDescriptor(&d.w), "cudnnCreateFilterDescriptor");
  check(cudnnCreateConvolutionDescriptor(&d.conv), "cudnnCreateConvolutionDescriptor");
  const int k = static_cast<int>(o.kernel), p = static_cast<int>(o.padding),
            s = static_cast<int>(o.stride);
  check(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                   static_cast<int>(o.out_channels), static_cast<int>(in.c), k, k),
        "cudnnSetFilter4dDescriptor");
  // Cross-correlation, as PyTorch and the CPU's Conv2d compute it; fp32 FMA math, no TF32.
  check(cudnnSetConvolution2dDescriptor(d.conv, p, p, s, s, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  set_nchw(d.x, batch, in);
  int n = 0, c = 0, h = 0, w = 0;
  check(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w),
        "cudnnGetConvolution2dForwardOutputDim");
  out_ = {c, h, w};
  set_nchw(d.y, batch, out_);
  set_nchw(d.bias, 1, {c, 1, 1});
  d.x_size = static_cast<std::size_t>(batch * in.size());
  d.w_size = static_cast<std::size_t>(o.out_channels * in.c * o.kernel * o.kernel);
  d.y_size = static_cast<std::size_t>(batch * out_.size());
  d.batch = batch;
  d.bias_partials = DeviceArray<double>(channel_sum_partials(batch, c));
  choose_algorithms(d);
}

CudnnConv2d::~CudnnConv2d() {
  Descriptors& d = *d_;
  cudnnDestroyConvolutionDescriptor(d.conv);
  cudnnDestroyFilterDescriptor(d.w);
  cudnnDestroyTensorDescriptor(d.bias);
  cudnnDestroyTensorDescriptor(d.y);
  cudnnDestroyTensorDescriptor(d.x);
}

void CudnnConv2d::forward(const float* x, const float* w, const float* b, float* y) {
  Descriptors& d = *d_;
  forward_pass(d, d.algorithms, x, w, y);
  const float one = 1.0f;
  if (b) check(cudnnAddTensor(d.handle, &one, d.bias, b, &one, d.y, y), "cudnnAddTensor");
}

void CudnnConv2d::backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                           float* db, bool accumulate) {
  Descriptors& d = *d_;
  const float beta = accumulate ? 1.0f : 0.0f;
  filter_pass(d, d.algorithms, x, dy, beta, dw);
  if (db) channel_sums(dy, d.batch, out_.c, out_.plane(), d.bias_partials.data(), db, accumulate);
  if (dx) data_pass(d, d.algorithms, w, dy, dx);
}

std::string CudnnConv2d::ranking() const {
  return d_->ranking;
}

std::string CudnnConv2d::algorithms() const {
  const Algorithms& a = d_->algorithms;
  return "fwd " + std::to_string(a.forward) + ", bwd data " + std::to_string(a.backward_data) +
         ", bwd filter " + std::to_string(a.backward_filter);
}

}  // namespace lbt::nn::cuda
