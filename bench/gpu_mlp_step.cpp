// lbt's MLP training step on the GPU (nn/cuda/device_mlp.hpp + optim/cuda: forward, softmax
// cross-entropy, backward, SGD momentum over the flat buffers) on a fixed batch resident on the
// device, as bench/reference/torch_gpu_mlp.py times PyTorch's. Prints CSV:
//   impl,batch,samples_per_s,min,max   (median [min-max] over timed windows)
//   usage: bench_gpu_mlp_step [--batches 32,128,...] [--seconds 1] [--dims 784,512,512,10]
#include <cstdio>
#include <random>

#include "bench/harness.hpp"
#include "core/cuda/gpu.hpp"
#include "core/params.hpp"
#include "nn/cuda/device_mlp.hpp"
#include "optim/cuda/device_optimizer.hpp"

int main(int argc, char** argv) {
  using namespace lbt;
  const bench::Args args(argc, argv);
  const std::vector<std::int64_t> batches =
      bench::parse_list(args.get("--batches", "32,128,512,2048,8192"));
  const std::vector<std::int64_t> dims = bench::parse_list(args.get("--dims", "784,512,512,10"));
  const double seconds = args.get_double("--seconds", 1.0);
  cuda::Gpu gpu;
  std::printf("impl,batch,samples_per_s,min,max\n");
  for (const std::int64_t batch : batches) {
    nn::cuda::DeviceMlp mlp(gpu, dims, batch);
    std::vector<Segment> segments;  // per layer: weight, bias (the CPU model's table)
    std::size_t offset = 0;
    for (std::size_t l = 0; l + 1 < dims.size(); ++l) {
      const auto w = static_cast<std::size_t>(dims[l] * dims[l + 1]);
      const auto b = static_cast<std::size_t>(dims[l + 1]);
      const std::string layer = std::to_string(l);  // appended: GCC 12's false -Wrestrict
      segments.push_back(
          make_segment(std::string("w").append(layer), offset, w, ParamKind::kWeight));
      segments.push_back(
          make_segment(std::string("b").append(layer), offset + w, b, ParamKind::kBias));
      offset += w + b;
    }
    std::mt19937_64 rng(1);
    std::normal_distribution<float> normal(0.0f, 0.05f);
    std::vector<float> params(mlp.num_params());
    for (float& p : params) p = normal(rng);
    cuda::copy_to_device(mlp.params(), params.data(), params.size() * sizeof(float));
    std::vector<float> x(static_cast<std::size_t>(batch * dims[0]));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    for (float& v : x) v = pixel(rng);
    for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<std::int32_t>(i % 10);
    const cuda::DeviceArray<float> dx{std::span<const float>(x)};
    const cuda::DeviceArray<std::int32_t> dlabels{std::span<const std::int32_t>(labels)};
    optim::OptimizerOptions o;
    o.name = "momentum";
    o.sgd.momentum = 0.9;
    optim::cuda::DeviceOptimizer opt(gpu, o, segments, mlp.num_params());
    std::int64_t step = 0;
    auto train_step = [&] {
      mlp.forward(dx.data(), batch);
      mlp.loss(dlabels.data(), batch, 1.0f / static_cast<float>(batch));
      mlp.backward(dx.data(), batch);
      opt.step(mlp.params(), mlp.grads(), 0.01, step++);
    };
    // Windows of whole steps, synchronised at each end: the GPU's time, not the launches'.
    for (int i = 0; i < 20; ++i) train_step();
    gpu.synchronize();
    std::vector<double> rates;
    const auto start = bench::Clock::now();
    while (bench::seconds_since(start) < seconds || rates.size() < 5) {
      const auto t0 = bench::Clock::now();
      std::int64_t steps = 0;
      while (bench::seconds_since(t0) < seconds / 10) {
        train_step();
        ++steps;
        if (steps % 64 == 0) gpu.synchronize();  // keep the launch queue short
      }
      gpu.synchronize();
      rates.push_back(static_cast<double>(steps * batch) / bench::seconds_since(t0));
    }
    const bench::Stats s = bench::stats_of(rates);
    std::printf("lbt_cuda,%lld,%.0f,%.0f,%.0f\n", static_cast<long long>(batch), s.median, s.min,
                s.max);
    std::fflush(stdout);
  }
}
