// Training-step throughput of an MLP (forward + softmax cross-entropy + backward + SGD
// momentum update) on a fixed in-memory batch, as bench/reference/torch_mlp.py does for
// PyTorch. Prints one CSV line per batch size: median samples/s with min and max.
//   usage: bench_mlp_step [--spec mlp:784-512-512-10] [--batches 32,128,...] [--threads 2]
//                         [--seconds 2]
#include <cstdio>
#include <string>

#include "bench/harness.hpp"
#include "bench/model_step.hpp"
#include "core/gemm.hpp"

using namespace lbt;

int main(int argc, char** argv) {
  const bench::Args args(argc, argv);
  const std::string spec = args.get("--spec", "mlp:784-512-512-10");
  const int threads = static_cast<int>(args.get_int("--threads", 2));
  // Warm up for 0.3 s, then time repetitions of ~0.2 s each until `seconds` have passed.
  const bench::Windows windows{0.3, 0, 0.2, args.get_double("--seconds", 2.0)};
  set_num_threads(threads);

  std::printf("impl,spec,batch,threads,median_samples_per_s,min,max,gflops\n");
  for (std::int64_t batch : bench::parse_list(args.get("--batches", "32,128,512,2048,8192"))) {
    bench::ModelStep step(spec, {}, batch);
    const bench::Stats rates = bench::samples_per_second(step, batch, windows);
    std::size_t weights = 0;
    for (const auto& seg : step.model().store().segments()) weights += seg.size;
    const double gflops = 6.0 * rates.median * weights / 1e9;  // 6 x batch x parameters per step
    std::printf("lbt,%s,%lld,%d,%.0f,%.0f,%.0f,%.1f\n", spec.c_str(), static_cast<long long>(batch),
                threads, rates.median, rates.min, rates.max, gflops);
    std::fflush(stdout);
  }
}
