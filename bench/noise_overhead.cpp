// Overhead of the online noise estimator (McCandlish et al. 2018, arXiv:1812.06162) on the
// Fashion-MNIST MLP 784-512-512-10: step time with noise off vs two_batch_all (every micro-batch)
// vs two_batch_first (micro-batch 0 only) vs per_example, each on every step (the worst case), and
// the defaults (two_batch: "first") at noise.every = 10, side by side in one run, at global batch
// 128 and 1024 (2 micro-batches each: the one-process two-batch form needs them). Whole-run
// differences of a few percent drown in this machine's noise, so a second table times the two-batch
// hooks alone (OnlineEstimator on a gradient buffer of the MLP's size, the calls the trainer makes
// per step) and divides by the noise-off step time of the first table, and a third compares, within
// one run, the steps that measure with the steps that do not (paired_overhead): the issue's "noise
// on vs off in one run". Usage: noise_overhead [steps=200] [repeats=7] [paired]. Prints CSV-like
// tables: whole runs as the median over repetitions of (mode / noise off in the same repetition);
// hooks as min over 50; the paired table as the median over repetitions. "paired": the third table
// only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "core/config.hpp"
#include "core/params.hpp"
#include "experiments/train_run.hpp"
#include "noise/online_estimator.hpp"

namespace {

// Seconds per step of the two-batch hooks alone: `world` ranks (2: the rank-local form, which
// reads the local gradient once) or one process with two micro-batches (`all` or `first`).
double two_batch_hook_seconds(int world, bool all_micro_batches, std::int64_t micro_batch,
                              int reps) {
  std::vector<lbt::Segment> segments;
  std::size_t offset = 0;
  const std::size_t widths[] = {784, 512, 512, 10};
  for (int layer = 0; layer < 3; ++layer) {
    const std::size_t w = widths[layer] * widths[layer + 1], b = widths[layer + 1];
    const std::string name = "fc" + std::to_string(layer + 1);
    segments.push_back(lbt::make_segment(name + ".weight", offset, w, lbt::ParamKind::kWeight));
    segments.push_back(lbt::make_segment(name + ".bias", offset + w, b, lbt::ParamKind::kBias));
    offset += w + b;
  }
  lbt::noise::OnlineOptions options;
  options.enabled = true;
  options.every = 1;
  options.per_example = false;
  options.all_micro_batches = all_micro_batches;
  const std::int64_t accum = world == 1 ? 2 : 1;
  lbt::noise::OnlineEstimator estimator(options, world, micro_batch, accum, segments);
  std::vector<float> grads(offset);
  for (std::size_t i = 0; i < offset; ++i) grads[i] = 1e-3f * static_cast<float>(i % 97);
  std::vector<double> slots(estimator.num_slots());
  double best = 1e30;
  for (int rep = 0; rep < reps; ++rep) {
    const auto start = lbt::bench::Clock::now();
    for (std::int64_t micro = 0; micro < accum; ++micro)
      estimator.after_micro_batch(rep, grads, {});
    estimator.before_allreduce(rep, grads, slots);
    estimator.after_allreduce(rep, grads, 1.0, slots);
    best = std::min(best, lbt::bench::seconds_since(start));
  }
  return best;
}

using lbt::bench::median_of;

std::string mlp_config(int batch, int steps, const std::string& noise) {
  return "[model]\nspec = \"mlp:784-512-512-10\"\n[data]\ndataset = \"fashion-mnist\"\n"
         "validation_size = 1000\n[train]\nthreads = 1\nglobal_batch = " +
         std::to_string(batch) + "\naccum_steps = 2\nsteps = " + std::to_string(steps) +
         "\neval_every = 1000000\nlog_every = 1000000\ncheckpoint_final = false\nseed = 0\n"
         "[optimizer]\nname = \"sgd\"\nlr = 0.01\n[noise]\n" +
         noise + "\n";
}

// Noise on vs off within ONE run, step by step: with noise.every = 2 the estimator works on the
// even steps only, so the odd steps of the same run are the noise-off reference, interleaved
// with the measured ones (the machine's drift, which makes whole runs differ by several percent
// here, cancels). A probe timestamps the top of every step. Returns the median duration of the
// active steps over that of the inactive ones, minus 1: the cost of one measurement.
double paired_overhead(int batch, int steps, const char* small_batches) {
  lbt::Config config = lbt::Config::from_string(mlp_config(
      batch, steps,
      std::string("enabled = true\nevery = 2\nwindow_steps = 20\nestimator = \"two_batch\"\n"
                  "small_batches = \"") +
          small_batches + "\""));
  std::vector<std::chrono::steady_clock::time_point> starts;
  starts.reserve(static_cast<std::size_t>(steps));
  lbt::experiments::RunOptions options{std::filesystem::temp_directory_path() / "lbt_bench_noise",
                                       true, false};
  options.probe = [&](std::int64_t, lbt::experiments::ProbeContext&) {
    starts.push_back(std::chrono::steady_clock::now());
  };
  lbt::experiments::run_training(config, options);
  std::vector<double> active, inactive;
  // the first steps warm caches and the prefetcher: skipped
  for (std::size_t s = 10; s + 1 < starts.size(); ++s) {
    const double dt = std::chrono::duration<double>(starts[s + 1] - starts[s]).count();
    (s % 2 == 0 ? active : inactive).push_back(dt);
  }
  return median_of(active) / median_of(inactive) - 1.0;
}

struct Mode {
  const char* name;
  const char* noise;
};
const Mode kModes[] = {
    {"off", "enabled = false"},
    {"two_batch_all/1",
     "enabled = true\nevery = 1\nestimator = \"two_batch\"\nsmall_batches = \"all\""},
    {"two_batch_first/1",
     "enabled = true\nevery = 1\nestimator = \"two_batch\"\nsmall_batches = \"first\""},
    {"two_batch/10", "enabled = true\nevery = 10\nestimator = \"two_batch\""},
    {"per_example/1", "enabled = true\nevery = 1\nestimator = \"per_example\""},
    {"both/10", "enabled = true\nevery = 10\nestimator = \"both\""},
};

// Table 1, whole runs per mode. Returns the noise-off ms per step per batch (median).
std::vector<double> whole_run_table(int steps, int repeats) {
  // Each repetition runs every mode once, in an order rotated by one per repetition, and each
  // mode's time is divided by the noise-off run of the same repetition: the machine's drift
  // between repetitions cancels. Reported: the median ratio over repetitions, with min and max.
  std::printf("batch,mode,ms_per_step_median,ratio_to_off_median,ratio_min,ratio_max,repeats\n");
  std::vector<double> off_ms;  // noise-off ms per step, per batch (median)
  for (int batch : {128, 1024}) {
    const std::size_t M = std::size(kModes);
    std::vector<std::vector<double>> ms(M), ratio(M);
    for (int rep = 0; rep < repeats; ++rep) {
      std::vector<double> this_rep(M);
      for (std::size_t k = 0; k < M; ++k) {
        const std::size_t m = (k + static_cast<std::size_t>(rep)) % M;
        lbt::Config config = lbt::Config::from_string(
            mlp_config(batch, batch > 128 ? std::max(steps / 4, 10) : steps, kModes[m].noise));
        lbt::experiments::RunOptions options{
            std::filesystem::temp_directory_path() / "lbt_bench_noise", true, false};
        const auto r = lbt::experiments::run_training(config, options);
        // wall time includes one final evaluation (same in every mode); per step:
        this_rep[m] = r.outcome.wall_time_s / r.outcome.steps * 1e3;
      }
      for (std::size_t m = 0; m < M; ++m) {
        ms[m].push_back(this_rep[m]);
        ratio[m].push_back(this_rep[m] / this_rep[0]);
      }
    }
    for (std::size_t m = 0; m < M; ++m) {
      std::printf("%d,%s,%.3f,%.4f,%.4f,%.4f,%d\n", batch, kModes[m].name, median_of(ms[m]),
                  median_of(ratio[m]), *std::min_element(ratio[m].begin(), ratio[m].end()),
                  *std::max_element(ratio[m].begin(), ratio[m].end()), repeats);
    }
    std::fflush(stdout);
    off_ms.push_back(median_of(ms[0]));
  }
  return off_ms;
}

// Table 2, the two-batch hooks alone, as a share of the noise-off step of table 1.
void hook_table(const std::vector<double>& off_ms) {
  // pct_at_every_10: the same cost spread over the default noise.every = 10 steps
  std::printf("\nbatch,two_batch_form,hook_ms_per_step,pct_of_noise_off_step,pct_at_every_10\n");
  const int batches[] = {128, 1024};
  for (int k = 0; k < 2; ++k) {
    struct Form {
      const char* name;
      int world;
      bool all;
    };
    for (const Form f : {Form{"micro_batch_all", 1, true}, Form{"micro_batch_first", 1, false},
                         Form{"rank_local", 2, true}}) {
      const double ms = 1e3 * two_batch_hook_seconds(f.world, f.all, batches[k] / 2, 50);
      std::printf("%d,%s,%.4f,%.2f,%.3f\n", batches[k], f.name, ms, 100.0 * ms / off_ms[k],
                  10.0 * ms / off_ms[k]);
    }
  }
}

// Table 3, noise on vs off in the same run.
void paired_table(int repeats) {
  // The headline: noise on vs off in the same run (paired_overhead), per measurement and at
  // the default noise.every = 10; median over repetitions with their range.
  std::printf(
      "\nbatch,small_batches,pct_per_measured_step_median,pct_at_every_10_median,"
      "pct_at_every_10_min,pct_at_every_10_max,repeats\n");
  for (int batch : {128, 1024}) {
    for (const char* small : {"all", "first"}) {
      std::vector<double> pct;
      for (int rep = 0; rep < repeats; ++rep)
        pct.push_back(100.0 * paired_overhead(batch, batch > 128 ? 400 : 1000, small));
      const double med = median_of(pct);
      std::printf("%d,%s,%.2f,%.3f,%.3f,%.3f,%d\n", batch, small, med, med / 10.0,
                  *std::min_element(pct.begin(), pct.end()) / 10.0,
                  *std::max_element(pct.begin(), pct.end()) / 10.0, repeats);
      std::fflush(stdout);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 200;
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 7;
  const bool paired_only = argc > 3 && std::string(argv[3]) == "paired";
  if (paired_only) {
    // The first two tables' headers still print, with no rows, as they always have.
    std::printf("batch,mode,ms_per_step_median,ratio_to_off_median,ratio_min,ratio_max,repeats\n");
    std::printf("\nbatch,two_batch_form,hook_ms_per_step,pct_of_noise_off_step,pct_at_every_10\n");
  } else {
    hook_table(whole_run_table(steps, repeats));
  }
  paired_table(repeats);
  return 0;
}
