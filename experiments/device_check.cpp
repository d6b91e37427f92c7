// lbt doctor --device cuda: the GPU parts (core/cuda, optim/cuda, nn/cuda) beside the CPU
// backend on the same random inputs.
#include "experiments/device_check.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "core/error.hpp"

#if defined(LBT_HAVE_CUDA)
#include "core/cuda/gpu.hpp"
#include "core/device.hpp"
#include "core/rng.hpp"
#include "experiments/device_check_parts.hpp"
#include "nn/backend.hpp"
#include "nn/cuda/cudnn_conv.hpp"
#include "nn/model.hpp"
#include "noise/cuda/gradient_reader.hpp"
#include "optim/cuda/device_optimizer.hpp"
#include "optim/optimizer_options.hpp"
#endif

namespace lbt::experiments {

bool DeviceCheckReport::ok() const {
  return std::all_of(rows.begin(), rows.end(), [](const DeviceCheckRow& r) { return r.ok(); });
}

bool DeviceCheckReport::ok_for(const std::vector<std::string>& layer_types) const {
  auto relied_on = [&](const DeviceCheckRow& r) {
    return r.layers.empty() || std::any_of(r.layers.begin(), r.layers.end(), [&](auto& t) {
             return std::find(layer_types.begin(), layer_types.end(), t) != layer_types.end();
           });
  };
  return std::all_of(rows.begin(), rows.end(),
                     [&](const DeviceCheckRow& r) { return r.ok() || !relied_on(r); });
}

std::string format_report(const DeviceCheckReport& report) {
  std::string out = "device: " + report.device + "\nlibraries: " + report.libraries + "\n";
  char line[256];
  std::snprintf(line, sizeof line, "%-34s %12s %12s %10s  %s\n", "op", "max |gpu-cpu|", "relative",
                "tolerance", "verdict");
  out += line;
  for (const DeviceCheckRow& r : report.rows) {
    std::snprintf(line, sizeof line, "%-34s %12.3e %12.3e %10.1e  %s", r.op.c_str(),
                  r.max_abs_error, r.relative(), r.tolerance, r.ok() ? "ok" : "DISAGREES");
    out += line;
    if (!r.ok() && !r.layers.empty()) {
      out += " (refuses runs with";
      for (const std::string& t : r.layers) out += " " + t;
      out += ")";
    }
    out += "\n";
  }
  if (report.ok())
    out += "the GPU agrees with the CPU backend on every op\n";
  else if (report.ok_for({}))
    out +=
        "the GPU DISAGREES with the CPU backend on the layers named: runs using them are refused\n";
  else
    out += "the GPU DISAGREES with the CPU backend: do not train on it\n";
  for (const DeviceCheckRow& r : report.rows) {
    if (!r.why.empty()) out += "  " + r.op + ": " + r.why + "\n";
  }
  return out;
}

#if !defined(LBT_HAVE_CUDA)

bool cuda_built() {
  return false;
}

DeviceCheckReport check_cuda_device(std::uint64_t) {
  throw ConfigError(
      "this lbt was built without CUDA (no nvcc at configure time, or LBT_WITH_CUDA=OFF)",
      "install the CUDA toolkit and rebuild with -DLBT_WITH_CUDA=ON");
}

#else

bool cuda_built() {
  return true;
}

namespace device_check {

double sum_tolerance(std::int64_t k) {
  return 8.0 * std::sqrt(static_cast<double>(k)) * 6e-8;
}

DeviceCheckRow compare(std::string op, std::span<const float> gpu, std::span<const float> cpu,
                       double tolerance, std::string why) {
  DeviceCheckRow row{std::move(op), 0.0, 0.0, tolerance, std::move(why)};
  if (gpu.size() != cpu.size()) throw Error("device check " + row.op + ": sizes differ");
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    const double diff = std::fabs(static_cast<double>(gpu[i]) - cpu[i]);
    row.max_abs_error = std::isnan(diff) ? INFINITY : std::max(row.max_abs_error, diff);
    row.scale = std::max(row.scale, std::fabs(static_cast<double>(cpu[i])));
  }
  return row;
}

void cover(std::vector<DeviceCheckRow>& rows, std::size_t first, std::vector<std::string> layers) {
  for (std::size_t i = first; i < rows.size(); ++i) rows[i].layers = layers;
}

std::vector<float> uniform(std::size_t n, Rng& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

std::vector<float> download(const float* device, std::size_t n) {
  std::vector<float> host(n);
  lbt::cuda::copy_to_host(host.data(), device, n * sizeof(float));
  return host;
}

}  // namespace device_check

namespace {

using device_check::compare;
using device_check::sum_tolerance;
using device_check::uniform;
using lbt::cuda::DeviceArray;
using lbt::cuda::Gpu;

void check_gemms(const Gpu& gpu, Rng& rng, std::vector<DeviceCheckRow>& rows) {
  const int m = 300, n = 200, k = 100;
  for (const auto& [ta, tb] : {std::pair{false, false}, {false, true}, {true, false}}) {
    const std::vector<float> a = uniform(std::size_t{m} * k, rng),
                             b = uniform(std::size_t{k} * n, rng);
    const int lda = ta ? m : k, ldb = tb ? k : n;
    std::vector<float> c_cpu(std::size_t{m} * n, 0.5f);
    host_device().gemm(ta, tb, m, n, k, 1.0f, a.data(), lda, b.data(), ldb, 0.5f, c_cpu.data(), n);
    DeviceArray<float> da{std::span<const float>(a)}, db{std::span<const float>(b)};
    const std::vector<float> c_start(std::size_t{m} * n, 0.5f);
    DeviceArray<float> dc{std::span<const float>(c_start)};
    gpu.gemm(ta, tb, m, n, k, 1.0f, da.data(), lda, db.data(), ldb, 0.5f, dc.data(), n);
    const std::string name =
        std::string("cuBLAS gemm ") + (ta ? "T" : "N") + (tb ? "T" : "N") + " 300x200x100";
    rows.push_back(compare(name, dc.download(), c_cpu, sum_tolerance(k),
                           "float32 sums of 100 products in another order"));
  }
}

void check_sum_squares(const Gpu& gpu, Rng& rng, std::vector<DeviceCheckRow>& rows) {
  const std::vector<float> x = uniform(1 << 20, rng);
  const double cpu = host_device().sum_squares(x);
  DeviceArray<float> dx{std::span<const float>(x)};
  const double on_gpu = gpu.sum_squares(dx.data(), x.size());
  rows.push_back({"noise |g|^2 (double sum, 1M)", std::fabs(on_gpu - cpu), cpu, 1e-12,
                  "double sums in another order"});
}

// The two-batch noise sums of 3 accumulated micro-batches (online_estimator.cpp: |A_k -
// A_{k-1}|^2 per segment), and the segments' |A|^2, by the GPU's reader beside the host's.
void check_noise_reader(const Gpu& gpu, Rng& rng, std::vector<DeviceCheckRow>& rows) {
  const std::vector<Segment> segments = {{"a", 0, 300001, ParamKind::kWeight},
                                         {"b", 300032, 77, ParamKind::kBias},
                                         {"c", 300128, 1 << 18, ParamKind::kWeight}};
  const std::size_t n = 300128 + (1 << 18);
  std::vector<float> accumulated(n, 0.0f), previous(n);
  DeviceArray<float> on_gpu(n);
  noise::HostGradientReader host(accumulated, segments, previous.data());
  noise::cuda::CudaGradientReader device(gpu, on_gpu.data(), segments);
  double error = 0.0, scale = 0.0;
  auto compare_sums = [&](const std::vector<double>& a, const std::vector<double>& b) {
    for (std::size_t s = 0; s < a.size(); ++s) {
      error = std::max(error, std::fabs(a[s] - b[s]));
      scale = std::max(scale, std::fabs(b[s]));
    }
  };
  const int micro_batches = 3;
  for (int k = 0; k < micro_batches; ++k) {
    const std::vector<float> g = uniform(n, rng);
    for (std::size_t i = 0; i < n; ++i) accumulated[i] += g[i] / micro_batches;
    on_gpu.upload(accumulated);
    std::vector<double> want(segments.size()), got(segments.size());
    host.segment_change_sq_norms(want, k == 0, k + 1 == micro_batches);
    device.segment_change_sq_norms(got, k == 0, k + 1 == micro_batches);
    compare_sums(got, want);
    host.segment_sq_norms(want);
    device.segment_sq_norms(got);
    compare_sums(got, want);
  }
  rows.push_back({"noise two-batch sums, 3 micro-batches",
                  error,
                  scale,
                  1e-12,
                  "double sums of float differences in another order",
                  {"two_batch_noise"}});
}

void check_nccl(const Gpu& gpu, Rng& rng, std::vector<DeviceCheckRow>& rows) {
  const std::vector<float> x = uniform(1 << 16, rng);
  DeviceArray<float> dx{std::span<const float>(x)};
  lbt::cuda::nccl_allreduce_one_rank(gpu, dx.data(), x.size());
  rows.push_back(compare("NCCL all-reduce, 1 rank", dx.download(), x, 0.0,
                         "one rank: the sum is the input, bit for bit"));
}

struct ConvCase {
  const char* name;
  nn::Shape3 in;
  nn::Conv2dOptions options;
};

// The simple CNN's second convolution and a ResNet-style strided one, forward and backward,
// cuDNN beside the CPU's Conv2d (a ReLU before it, so the CPU computes its input gradient).
void check_convolutions(Rng& rng, std::uint64_t seed, std::vector<DeviceCheckRow>& rows) {
  const ConvCase cases[] = {
      {"cuDNN conv 32->64 5x5 on 14x14", {32, 14, 14}, {64, 5, 1, 2, true}},
      {"cuDNN conv 16->32 3x3 /2 on 16x16", {16, 16, 16}, {32, 3, 2, 1, false}}};
  const std::int64_t batch = 8;
  for (const ConvCase& c : cases) {
    nn::Model cpu;
    cpu.add(nn::cpu_backend().relu(c.in.size()));
    cpu.add(nn::cpu_backend().conv2d(c.in, c.options, nn::InitScheme::kHe));
    Rng init = make_rng(seed, RngStream::kInit);
    cpu.build(init);
    cpu.reserve(batch);
    nn::cuda::CudnnConv2d gpu(c.in, c.options, batch);
    const nn::Shape3 out = gpu.out_shape();
    const std::vector<float> x = uniform(static_cast<std::size_t>(batch * c.in.size()), rng, 0, 1);
    const float* y = cpu.forward(x.data(), batch, true);
    const std::span<const float> params = cpu.store().params();
    const std::size_t weights = cpu.store().segments()[0].size;
    DeviceArray<float> dx_in{std::span<const float>(x)}, dparams{params};
    DeviceArray<float> dy_out(static_cast<std::size_t>(batch * out.size()));
    const float* bias = c.options.bias ? dparams.data() + weights : nullptr;
    gpu.forward(dx_in.data(), dparams.data(), bias, dy_out.data());
    const std::int64_t taps = c.in.c * c.options.kernel * c.options.kernel;
    rows.push_back(compare(
        std::string(c.name) + " forward", dy_out.download(),
        std::vector<float>(y, y + batch * out.size()), sum_tolerance(taps),
        "float32 sums over channels and taps in another order (cuDNN's " + gpu.algorithms() + ")"));
    const std::vector<float> dy = uniform(static_cast<std::size_t>(batch * out.size()), rng);
    std::copy(dy.begin(), dy.end(), cpu.output_grad());
    cpu.backward(x.data(), batch, false);
    DeviceArray<float> ddy{std::span<const float>(dy)}, dgrads(params.size()), dgrad_in(x.size());
    gpu.backward(dx_in.data(), dparams.data(), ddy.data(), dgrad_in.data(), dgrads.data(),
                 c.options.bias ? dgrads.data() + weights : nullptr);
    rows.push_back(compare(std::string(c.name) + " dW, db", dgrads.download(), cpu.store().grads(),
                           sum_tolerance(batch * out.plane()),
                           "sums over the batch and the plane in another order"));
    const float* dx = cpu.layer_output_grad(0);
    rows.push_back(compare(
        std::string(c.name) + " dx", dgrad_in.download(), std::vector<float>(dx, dx + x.size()),
        sum_tolerance(c.options.out_channels * c.options.kernel * c.options.kernel),
        "sums over output channels and taps in another order"));
  }
}

struct OptimizerCase {
  const char* name;
  double lr;
  bool elementwise;  // no per-segment norms: the GPU must match bit for bit
  void (*setup)(optim::OptimizerOptions&);
};

const OptimizerCase kOptimizerCases[] = {
    {"sgd", 0.05, true,
     [](optim::OptimizerOptions& o) {
       o.sgd = {0.0, 0.0, false, 1e-4};
     }},
    {"momentum", 0.05, true,
     [](optim::OptimizerOptions& o) {
       o.sgd = {0.9, 0.0, false, 1e-4};
     }},
    {"nesterov", 0.05, true,
     [](optim::OptimizerOptions& o) {
       o.sgd = {0.9, 0.0, true, 1e-4};
     }},
    {"adam", 1e-3, true, [](optim::OptimizerOptions& o) { o.adam.weight_decay = 1e-4; }},
    {"adamw", 1e-3, true,
     [](optim::OptimizerOptions& o) { o.adam.weight_decay = 0.01, o.adam.decoupled = true; }},
    {"lars", 1.0, false, [](optim::OptimizerOptions&) {}},
    {"larc", 0.05, false,
     [](optim::OptimizerOptions& o) {
       o.larc_base = "momentum", o.sgd = {0.9, 0.0, false, 0.0};
     }},
    {"lamb", 1e-2, false, [](optim::OptimizerOptions&) {}},
};

// Each optimizer for 100 steps from the same parameters and gradients on both backends.
void check_optimizers(const Gpu& gpu, Rng& rng, std::uint64_t seed,
                      std::vector<DeviceCheckRow>& rows) {
  auto model = nn::Model::from_spec("mlp:784-64-10", nn::InitScheme::kHe);
  Rng init = make_rng(seed, RngStream::kInit);
  model->build(init);
  const std::vector<float> start(model->store().params().begin(), model->store().params().end());
  const std::size_t n = start.size();
  std::normal_distribution<float> gradient(0.0f, 0.1f);
  for (const OptimizerCase& c : kOptimizerCases) {
    optim::OptimizerOptions o;
    o.name = c.name;
    c.setup(o);
    std::vector<Segment> segments = model->store().segments();
    optim::apply_exclusions(o, segments);
    auto cpu_opt = optim::make_optimizer(o, n);
    optim::cuda::DeviceOptimizer gpu_opt(gpu, o, segments, n);
    std::vector<float> params = start, grads(n);
    DeviceArray<float> dparams{std::span<const float>(start)}, dgrads(n);
    for (std::int64_t step = 0; step < 100; ++step) {
      for (float& g : grads) g = gradient(rng);
      dgrads.upload(grads);
      cpu_opt->step({params, grads, segments, c.lr, step});
      gpu_opt.step(dparams.data(), dgrads.data(), c.lr, step);
    }
    const std::string op = std::string(c.name) + " x100 steps (params)";
    rows.push_back(c.elementwise ? compare(op, dparams.download(), params, 0.0,
                                           "one formula (optim/update_rules.hpp): bit for bit")
                                 : compare(op, dparams.download(), params, 1e-6,
                                           "per-segment norms summed in double in another order"));
  }
}

}  // namespace

DeviceCheckReport check_cuda_device(std::uint64_t seed) {
  lbt::cuda::require_gpu();
  Gpu gpu;
  DeviceCheckReport report{lbt::cuda::describe_device(), lbt::cuda::library_versions(), {}};
  Rng rng = make_rng(seed, RngStream::kSynthetic);
  check_gemms(gpu, rng, report.rows);
  check_sum_squares(gpu, rng, report.rows);
  check_noise_reader(gpu, rng, report.rows);
  device_check::check_mlp_step(gpu, rng, seed, report.rows);
  device_check::check_mlp_training(gpu, rng, seed, report.rows);
  // Rows that vouch for some layers only: a disagreement refuses only runs that use them.
  std::size_t first = report.rows.size();
  device_check::check_cnn(gpu, rng, seed, report.rows);
  device_check::cover(report.rows, first, {"conv", "pool"});
  first = report.rows.size();
  device_check::check_resnet(gpu, rng, seed, report.rows);
  device_check::cover(report.rows, first, {"batchnorm", "residual", "global_avgpool"});
  first = report.rows.size();
  device_check::check_small_net(gpu, rng, seed, report.rows);
  device_check::cover(report.rows, first, {"avgpool", "batchnorm"});
  first = report.rows.size();
  check_convolutions(rng, seed, report.rows);
  device_check::cover(report.rows, first, {"conv", "residual"});
  check_optimizers(gpu, rng, seed, report.rows);
  check_nccl(gpu, rng, report.rows);
  return report;
}

#endif

}  // namespace lbt::experiments
