// Training-step throughput of an image model (forward + softmax cross-entropy + backward +
// SGD momentum update) on a fixed in-memory batch, as bench/reference/torch_cnn.py does for
// PyTorch. One CSV line per batch size: median samples/s with min and max over ~0.3 s
// repetitions, and GFLOP/s counting 6 x (conv + linear multiply-adds) per example.
//   usage: bench_cnn_step [--spec cnn:simple] [--shape 1,28,28] [--batches 32,128,512]
//                         [--threads 2] [--seconds 3]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
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

namespace {
std::vector<std::int64_t> parse_list(const std::string& text) {
  std::vector<std::int64_t> out;
  std::stringstream ss(text);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(std::stoll(item));
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  std::string spec = "cnn:simple", shape_arg = "1,28,28", batches_arg = "32,128,512";
  int threads = 2;
  double seconds = 3.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--spec"))
      spec = argv[i + 1];
    else if (!std::strcmp(argv[i], "--shape"))
      shape_arg = argv[i + 1];
    else if (!std::strcmp(argv[i], "--batches"))
      batches_arg = argv[i + 1];
    else if (!std::strcmp(argv[i], "--threads"))
      threads = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--seconds"))
      seconds = std::atof(argv[i + 1]);
  }
  set_num_threads(threads);
  const auto shape = parse_list(shape_arg);

  std::printf("impl,spec,batch,threads,median_samples_per_s,min,max,gflops\n");
  for (std::int64_t batch : parse_list(batches_arg)) {
    auto model = nn::Model::from_spec(spec, nn::InitScheme::kHe, shape);
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
    std::int64_t t = 0;
    const auto warm_end = Clock::now() + std::chrono::milliseconds(500);
    while (Clock::now() < warm_end || t < 2) step(t++);
    std::vector<double> rates;
    const auto end = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < end || rates.size() < 5) {
      const auto t0 = Clock::now();
      std::int64_t n = 0;
      while (std::chrono::duration<double>(Clock::now() - t0).count() < 0.3) step(t++), ++n;
      rates.push_back(n * batch / std::chrono::duration<double>(Clock::now() - t0).count());
    }
    std::sort(rates.begin(), rates.end());
    const double median = rates[rates.size() / 2];
    std::int64_t macs = 0;
    for (const auto& layer : model->layers()) macs += layer->macs_per_example();
    const double gflops = 6.0 * median * static_cast<double>(macs) / 1e9;
    std::printf("lbt,%s,%lld,%d,%.0f,%.0f,%.0f,%.1f\n", spec.c_str(), static_cast<long long>(batch),
                threads, median, rates.front(), rates.back(), gflops);
    std::fflush(stdout);
  }
}
