// Where an image model's training step spends its time: each layer's forward and backward
// timed on its own (wall clock, median over steps) on a fixed random batch, with its share of
// the sum. For finding the next thing to speed up; bench_cnn_step measures whole steps.
//   usage: bench_layer_times [--spec resnet:8] [--shape 3,32,32] [--batch 32] [--threads 2]
//                            [--steps 30]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/gemm.hpp"
#include "core/rng.hpp"
#include "core/tensor.hpp"
#include "nn/model.hpp"

using namespace lbt;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  std::string spec = "resnet:8", shape_arg = "3,32,32";
  std::int64_t batch = 32, steps = 30;
  int threads = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--spec"))
      spec = argv[i + 1];
    else if (!std::strcmp(argv[i], "--shape"))
      shape_arg = argv[i + 1];
    else if (!std::strcmp(argv[i], "--batch"))
      batch = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--steps"))
      steps = std::atoll(argv[i + 1]);
  }
  set_num_threads(threads);
  std::vector<std::int64_t> shape;
  for (char* p = shape_arg.data(); *p;) shape.push_back(std::strtoll(p, &p, 10)), p += *p == ',';
  auto model = nn::Model::from_spec(spec, nn::InitScheme::kHe, shape);
  auto rng = make_rng(0, RngStream::kInit);
  model->build(rng);
  const auto& layers = model->layers();
  const std::size_t L = layers.size();
  // acts[i] is layer i's input (acts[0] the batch), grads[i] the gradient at that input.
  std::vector<AlignedBuffer> acts(L + 1), grads(L + 1);
  std::normal_distribution<float> normal;
  for (std::size_t i = 0; i <= L; ++i) {
    const std::int64_t n =
        batch * (i < L ? layers[i]->in_features() : layers[L - 1]->out_features());
    acts[i].resize(static_cast<std::size_t>(n));
    grads[i].resize(static_cast<std::size_t>(n));
  }
  for (std::size_t k = 0; k < acts[0].size(); ++k) acts[0][k] = normal(rng);
  for (std::size_t k = 0; k < grads[L].size(); ++k) grads[L][k] = 1e-3f * normal(rng);
  std::vector<std::vector<double>> fwd(L), bwd(L);
  auto seconds = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  for (std::int64_t s = 0; s < steps + 3; ++s) {
    for (std::size_t i = 0; i < L; ++i) {
      const auto t0 = Clock::now();
      layers[i]->forward(acts[i].data(), acts[i + 1].data(), batch, true);
      if (s >= 3) fwd[i].push_back(seconds(t0));
    }
    for (std::size_t i = L; i-- > 0;) {
      const auto t0 = Clock::now();
      layers[i]->backward(acts[i].data(), acts[i + 1].data(), grads[i + 1].data(),
                          i > 0 ? grads[i].data() : nullptr, batch, false);
      if (s >= 3) bwd[i].push_back(seconds(t0));
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  double total = 0.0;
  std::vector<double> f(L), b(L);
  for (std::size_t i = 0; i < L; ++i) total += (f[i] = median(fwd[i])) + (b[i] = median(bwd[i]));
  std::printf("layer,forward_ms,backward_ms,share\n");
  for (std::size_t i = 0; i < L; ++i)
    std::printf("%zu %s,%.3f,%.3f,%.1f%%\n", i, layers[i]->describe().c_str(), 1e3 * f[i],
                1e3 * b[i], 100.0 * (f[i] + b[i]) / total);
  std::printf("total,%.3f ms per step (%s, batch %lld, %d threads)\n", 1e3 * total, spec.c_str(),
              static_cast<long long>(batch), threads);
}
