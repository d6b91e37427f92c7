// Where an image model's training step spends its GPU time: lbt's GPU network
// (nn/cuda/device_net.hpp) on a fixed batch resident on the device, each op's forward and
// backward timed by CUDA events on the stream (core/cuda/op_timer.hpp), with the loss and the
// momentum-SGD step, beside the whole step timed without the events. What PyTorch's
// torch.profiler table (bench/reference/torch_gpu_mlp.py --profile) is compared with; run once
// per LBT_CUDNN_ALGOS value to see each convolution's algorithms (scripts/gpu/check.sh, profile).
// Prints CSV: op,ms_per_step,share (of the timed ops' sum), then the whole step's ms.
//   usage: bench_gpu_layer_times [--spec cnn:simple] [--shape 1,28,28] [--batch 512]
//                                [--steps 20]
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "core/cuda/gpu.hpp"
#include "core/cuda/op_timer.hpp"
#include "core/error.hpp"
#include "core/kernel_choice.hpp"
#include "core/rng.hpp"
#include "nn/cuda/device_net.hpp"
#include "nn/model.hpp"
#include "optim/cuda/device_optimizer.hpp"

using namespace lbt;

namespace {

struct Setup {
  std::string spec;
  std::vector<std::int64_t> shape;
  std::int64_t batch = 0, steps = 0;
};

void run(const Setup& s) {
  cuda::Gpu gpu;
  const nn::Shape3 input{s.shape.at(0), s.shape.at(1), s.shape.at(2)};
  const std::vector<nn::LayerSpec> layers = nn::expand_spec(s.spec, s.shape).layers;
  auto cpu = nn::Model::from_layers(layers, nn::InitScheme::kHe, s.shape);
  Rng init = make_rng(0, RngStream::kInit);
  cpu->build(init);
  const std::span<const float> params = cpu->store().params();
  nn::cuda::DeviceNet net(gpu, layers, input, s.batch, cpu->store().segments(), params.size());
  cuda::copy_to_device(net.params(), params.data(), params.size_bytes());

  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(s.batch * input.size()));
  for (float& v : x) v = pixel(rng);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(s.batch));
  const std::int64_t classes = cpu->output_dim();
  for (std::size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<std::int32_t>(static_cast<std::int64_t>(i) % classes);
  const cuda::DeviceArray<float> dx{std::span<const float>(x)};
  const cuda::DeviceArray<std::int32_t> dlabels{std::span<const std::int32_t>(labels)};
  optim::OptimizerOptions o;
  o.name = "momentum";
  o.sgd.momentum = 0.9;
  optim::cuda::DeviceOptimizer opt(gpu, o, cpu->store().segments(), params.size());

  cuda::OpTimer timer;
  std::int64_t step = 0;
  auto train_step = [&](cuda::OpTimer* t) {  // t: nullptr times nothing
    net.time_ops(t);
    net.forward(dx.data(), s.batch, /*train=*/true);
    if (t) t->begin();
    net.loss(dlabels.data(), s.batch, 1.0f / static_cast<float>(s.batch));
    if (t) t->end("loss");
    net.backward(dx.data(), s.batch, /*accumulate=*/false);
    if (t) t->begin();
    opt.step(net.params(), net.grads(), 0.01, step++);
    if (t) t->end("optimizer");
  };
  for (int i = 0; i < 20; ++i) train_step(nullptr);  // first use: cuDNN's choice, allocations
  gpu.synchronize();
  const auto t0 = bench::Clock::now();
  for (std::int64_t i = 0; i < s.steps; ++i) train_step(nullptr);
  gpu.synchronize();
  const double whole_ms = 1e3 * bench::seconds_since(t0) / static_cast<double>(s.steps);
  for (std::int64_t i = 0; i < s.steps; ++i) train_step(&timer);
  timer.collect();

  double sum = 0.0;
  for (const cuda::OpTimer::Total& t : timer.totals()) sum += t.ms;
  std::printf("# %s on %s, batch %lld, %s, LBT_CUDNN_ALGOS=%s, %lld steps\n", s.spec.c_str(),
              input.text().c_str(), static_cast<long long>(s.batch),
              cuda::describe_device().c_str(),
              std::string(kernel_choice(KernelChoice::kCudnnAlgos)).c_str(),
              static_cast<long long>(s.steps));
  for (const std::string& conv : net.conv_algorithms(s.batch))
    std::printf("# cuDNN's algorithms, %s\n", conv.c_str());
  std::printf("op,ms_per_step,share\n");
  const auto per_step = static_cast<double>(s.steps);
  for (const cuda::OpTimer::Total& t : timer.totals())
    std::printf("\"%s\",%.4f,%.3f\n", t.label.c_str(), t.ms / per_step, t.ms / sum);
  std::printf("\"sum of the ops above\",%.4f,1.000\n", sum / per_step);
  std::printf("\"whole step without events (%.0f samples/s)\",%.4f,\n",
              1e3 * static_cast<double>(s.batch) / whole_ms, whole_ms);
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args args(argc, argv);
  Setup s{args.get("--spec", "cnn:simple"), bench::parse_list(args.get("--shape", "1,28,28")),
          args.get_int("--batch", 512), args.get_int("--steps", 20)};
  if (const std::string key = args.unknown(); !key.empty()) {
    std::fprintf(stderr, "error: unknown option %s\nhint: see the usage at the top of %s\n",
                 key.c_str(), __FILE__);
    return 2;
  }
  try {
    if (s.shape.size() != 3) throw ConfigError("--shape takes C,H,W");
    run(s);
  } catch (const Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    if (!e.hint().empty()) std::fprintf(stderr, "hint: %s\n", e.hint().c_str());
    return e.exit_code();
  }
}
