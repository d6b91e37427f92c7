// Training-step throughput of an image model (forward + softmax cross-entropy + backward +
// SGD momentum update) on a fixed in-memory batch, as bench/reference/torch_cnn.py does for
// PyTorch. One CSV line per batch size: median samples/s with min and max over ~0.3 s
// repetitions, and GFLOP/s counting 6 x (conv + linear multiply-adds) per example.
//   usage: bench_cnn_step [--spec cnn:simple] [--shape 1,28,28] [--batches 32,128,512]
//                         [--threads 2] [--seconds 3]
#include <cstdio>
#include <string>

#include "bench/harness.hpp"
#include "bench/model_step.hpp"
#include "core/gemm.hpp"

using namespace lbt;

int main(int argc, char** argv) {
  const bench::Args args(argc, argv);
  const std::string spec = args.get("--spec", "cnn:simple");
  const int threads = static_cast<int>(args.get_int("--threads", 2));
  // Warm up for 0.5 s and 2 steps at least, then ~0.3 s repetitions until `seconds` passed.
  const bench::Windows windows{0.5, 2, 0.3, args.get_double("--seconds", 3.0)};
  set_num_threads(threads);
  const auto shape = bench::parse_list(args.get("--shape", "1,28,28"));

  std::printf("impl,spec,batch,threads,median_samples_per_s,min,max,gflops\n");
  for (std::int64_t batch : bench::parse_list(args.get("--batches", "32,128,512"))) {
    bench::ModelStep step(spec, shape, batch);
    const bench::Stats rates = bench::samples_per_second(step, batch, windows);
    std::int64_t macs = 0;
    for (const auto& layer : step.model().layers()) macs += layer->macs_per_example();
    const double gflops = 6.0 * rates.median * static_cast<double>(macs) / 1e9;
    std::printf("lbt,%s,%lld,%d,%.0f,%.0f,%.0f,%.1f\n", spec.c_str(), static_cast<long long>(batch),
                threads, rates.median, rates.min, rates.max, gflops);
    std::fflush(stdout);
  }
}
