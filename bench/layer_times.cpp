// Where an image model's training step spends its time: each layer's forward and backward
// timed on its own (wall clock, median over steps) on a fixed random batch, with its share of
// the sum. For finding the next thing to speed up; bench_cnn_step measures whole steps.
//   usage: bench_layer_times [--spec resnet:8] [--shape 3,32,32] [--batch 32] [--threads 2]
//                            [--steps 30]
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "core/gemm.hpp"
#include "core/rng.hpp"
#include "core/tensor.hpp"
#include "nn/model.hpp"

using namespace lbt;

int main(int argc, char** argv) {
  const bench::Args args(argc, argv);
  const std::string spec = args.get("--spec", "resnet:8");
  const std::int64_t batch = args.get_int("--batch", 32), steps = args.get_int("--steps", 30);
  const int threads = static_cast<int>(args.get_int("--threads", 2));
  set_num_threads(threads);
  const std::vector<std::int64_t> shape = bench::parse_list(args.get("--shape", "3,32,32"));
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
  const auto seconds = bench::seconds_since;
  for (std::int64_t s = 0; s < steps + 3; ++s) {
    for (std::size_t i = 0; i < L; ++i) {
      const auto t0 = bench::Clock::now();
      layers[i]->forward(acts[i].data(), acts[i + 1].data(), batch, true);
      if (s >= 3) fwd[i].push_back(seconds(t0));
    }
    for (std::size_t i = L; i-- > 0;) {
      const auto t0 = bench::Clock::now();
      layers[i]->backward(acts[i].data(), acts[i + 1].data(), grads[i + 1].data(),
                          i > 0 ? grads[i].data() : nullptr, batch, false);
      if (s >= 3) bwd[i].push_back(seconds(t0));
    }
  }
  const auto median = [](const std::vector<double>& v) { return bench::stats_of(v).median; };
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
