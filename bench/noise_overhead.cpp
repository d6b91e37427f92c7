// Overhead of the online noise estimator (McCandlish et al. 2018, arXiv:1812.06162) on the
// Fashion-MNIST MLP 784-512-512-10: step time with noise off vs two_batch (every micro-batch) vs
// two_batch_first (micro-batch 0 only) vs per_example, each on every step (the worst case), and
// both at the default noise.every = 10, side by side in one run, at global batch 128 and 1024
// (2 micro-batches each: the one-process two-batch form needs them).
// Usage: noise_overhead [steps=40] [repeats=3]. Prints a CSV-like table; min over repeats.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "experiments/train_run.hpp"

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 40;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
  struct Mode { const char* name; const char* noise; };
  const Mode modes[] = {
      {"off", "enabled = false"},
      {"two_batch/1", "enabled = true\nevery = 1\nestimator = \"two_batch\""},
      {"two_batch_first/1",
       "enabled = true\nevery = 1\nestimator = \"two_batch\"\nsmall_batches = \"first\""},
      {"per_example/1", "enabled = true\nevery = 1\nestimator = \"per_example\""},
      {"both/10", "enabled = true\nevery = 10\nestimator = \"both\""},
  };
  std::printf("batch,mode,ms_per_step,overhead_pct\n");
  for (int batch : {128, 1024}) {
    std::vector<double> best(std::size(modes), 1e30);
    for (int rep = 0; rep < repeats; ++rep) {
      for (std::size_t m = 0; m < std::size(modes); ++m) {  // interleaved, so drift hits every mode alike
        const std::string toml =
            "[model]\nspec = \"mlp:784-512-512-10\"\n[data]\ndataset = \"fashion-mnist\"\n"
            "validation_size = 1000\n[train]\nthreads = 1\nglobal_batch = " + std::to_string(batch) +
            "\naccum_steps = 2\nsteps = " + std::to_string(steps) +
            "\neval_every = 1000000\nlog_every = 1000000\nseed = 0\n"
            "[optimizer]\nname = \"sgd\"\nlr = 0.01\n[noise]\n" + modes[m].noise + "\n";
        lbt::Config config = lbt::Config::from_string(toml);
        lbt::experiments::RunOptions options{std::filesystem::temp_directory_path() / "lbt_bench_noise", true, false};
        const auto r = lbt::experiments::run_training(config, options);
        // wall time includes one final evaluation (same in every mode); per step:
        best[m] = std::min(best[m], r.outcome.wall_time_s / r.outcome.steps * 1e3);
      }
    }
    for (std::size_t m = 0; m < std::size(modes); ++m) {
      std::printf("%d,%s,%.3f,%.2f\n", batch, modes[m].name, best[m], 100.0 * (best[m] / best[0] - 1.0));
    }
  }
  return 0;
}
