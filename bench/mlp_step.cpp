// Training-step throughput of an MLP (forward + softmax cross-entropy + backward + SGD
// momentum update) on a fixed in-memory batch, as bench/reference/torch_mlp.py does for
// PyTorch. Prints one CSV line per batch size: median samples/s with min and max.
//   usage: bench_mlp_step [--spec mlp:784-512-512-10] [--batches 32,128,...] [--threads 2]
//                         [--seconds 2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/gemm.hpp"
#include "core/rng.hpp"
#include "optim/optimizer_options.hpp"
#include "nn/cpu/loss.hpp"
#include "nn/model.hpp"

using namespace lbt;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  std::string spec = "mlp:784-512-512-10", batches_arg = "32,128,512,2048,8192";
  int threads = 2;
  double seconds = 2.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--spec"))
      spec = argv[i + 1];
    else if (!std::strcmp(argv[i], "--batches"))
      batches_arg = argv[i + 1];
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seconds"))
      seconds = std::atof(argv[i + 1]);
  }
  set_num_threads(threads);
  std::vector<std::int64_t> batches;
  std::stringstream ss(batches_arg);
  for (std::string item; std::getline(ss, item, ',');) batches.push_back(std::stoll(item));

  std::printf("impl,spec,batch,threads,median_samples_per_s,min,max,gflops\n");
  for (std::int64_t batch : batches) {
    auto model = nn::Model::from_spec(spec, nn::InitScheme::kHe);
    auto rng = make_rng(0, RngStream::kInit);
    model->build(rng);
    model->reserve(batch);
    optim::OptimizerOptions sgd;  // momentum SGD, momentum 0.9
    auto optimizer = optim::make_optimizer(sgd, model->store().num_params());
    std::vector<float> x(static_cast<std::size_t>(batch * model->input_dim()));
    std::vector<std::int32_t> labels(static_cast<std::size_t>(batch));
    std::normal_distribution<float> normal;
    for (auto& v : x) v = normal(rng);
    for (auto& y : labels) y = static_cast<std::int32_t>(rng() % model->output_dim());
    ParameterStore& store = model->store();
    auto step = [&](std::int64_t t) {
      const float* logits = model->forward(x.data(), batch, true);
      nn::softmax_cross_entropy(logits, labels.data(), batch, model->output_dim(),
                                model->output_grad(), 1.0f / batch, nullptr);
      model->backward(x.data(), batch, /*accumulate=*/false);
      optimizer->step({store.params(), store.grads(), store.segments(), 1e-3, t});
    };
    // Warm up, then time repetitions of ~0.2 s each until `seconds` have passed.
    std::int64_t t = 0;
    const auto warm_end = Clock::now() + std::chrono::milliseconds(300);
    while (Clock::now() < warm_end) step(t++);
    std::vector<double> rates;
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < end || rates.size() < 5) {
      const auto t0 = Clock::now();
      std::int64_t n = 0;
      while (std::chrono::duration<double>(Clock::now() - t0).count() < 0.2) step(t++), ++n;
      rates.push_back(n * batch / std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(rates.begin(), rates.end());
    const double median = rates[rates.size() / 2];
    std::size_t weights = 0;
    for (const auto& seg : store.segments()) weights += seg.size;
    const double gflops = 6.0 * median * weights / 1e9;  // 6 x batch x parameters per step
    std::printf("lbt,%s,%lld,%d,%.0f,%.0f,%.0f,%.1f\n", spec.c_str(), static_cast<long long>(batch),
                threads, median, rates.front(), rates.back(), gflops);
    std::fflush(stdout);
  }
}
