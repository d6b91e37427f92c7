// Helpers for the noise suites: run a config through the real trainer (optionally on a given
// communicator) and read noise.jsonl back; closed forms for synthetic linear regression.
#pragma once
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/gemm.hpp"
#include "core/rng.hpp"
#include "nn/model.hpp"
#include "noise/online_estimator.hpp"
#include "optim/optimizer.hpp"
#include "support/process_scratch.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/data/load.hpp"
#include "trainer/data/synthetic.hpp"
#include "trainer/loop.hpp"

namespace lbt::test {

// TMP/lbt_test_noise_PID/NAME: a run of the noise suites, removed with the rest when the test
// process exits (one directory per process, so two builds' suites run at once do not meet).
inline std::filesystem::path noise_run_dir(const std::string& name) {
  static const ProcessScratch scratch(per_process("lbt_test_noise"));
  return scratch.path() / name;
}

// noise.jsonl lines keyed by estimator name, in file order.
inline std::map<std::string, std::vector<nlohmann::json>> read_noise(
    const std::filesystem::path& dir) {
  std::map<std::string, std::vector<nlohmann::json>> out;
  std::ifstream in(dir / "noise.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    if (j.contains("estimator")) out[j["estimator"].get<std::string>()].push_back(j);
  }
  return out;
}

// Trains `toml` on `comm` (rank 0 writes `dir`) exactly as run_training does, minus the CLI.
// Returns the final parameters, one vector per segment (weight, then bias).
inline std::vector<std::vector<float>> train_config(const std::string& toml,
                                                    comm::Communicator& comm,
                                                    const std::filesystem::path& dir) {
  Config config = Config::from_string(toml);
  if (!config.has("noise.enabled")) config.set("noise.enabled=true");
  config.validate(trainer::run_schema());
  const trainer::RunConfig run = trainer::resolve_run_config(config, comm.size());
  const trainer::TrainConfig& cfg = run.train;
  // as run_training does: the config's thread count (threads = 1 in synthetic_toml), so OpenMP
  // and OpenBLAS do not fork onto cores a loaded machine cannot give them (an idle partner thread
  // then waits a scheduler slice at every barrier: 100x slower runs)
  if (cfg.threads > 0) set_num_threads(cfg.threads);
  auto model = nn::Model::from_spec(cfg.model_spec, cfg.init);
  data::Splits splits = data::load_splits(cfg.data, cfg.seed);
  data::ShardedSampler sampler(splits.train.n, cfg.seed, comm.size(), comm.rank(), cfg.micro_batch,
                               cfg.accum_steps);
  auto rng = make_rng(cfg.seed, RngStream::kInit);
  model->build(rng);
  auto optimizer = optim::make_optimizer(run.optimizer, model->store().num_params());
  schedules::Schedule schedule =
      trainer::run_schedule(run, {sampler.steps_per_epoch(), cfg.steps}, &std::cerr);
  const noise::OnlineOptions& noise_options = run.noise;
  std::unique_ptr<trainer::RunDirectory> run_dir;
  if (comm.rank() == 0) {
    // With a pending summary first, as lbt train writes it: the next case's --overwrite
    // replaces only a directory whose summary.json marks it as lbt's run.
    run_dir = std::make_unique<trainer::RunDirectory>(dir, true);
    run_dir->write_summary({{"status", "running"}});
  }
  trainer::TrainContext ctx{cfg,     *model,    *optimizer,    schedule, comm,         splits,
                            sampler, cfg.steps, run_dir.get(), false,    noise_options};
  trainer::train(ctx);
  std::vector<std::vector<float>> params;
  const auto flat = model->store().params();
  for (const Segment& seg : model->store().segments()) {
    params.emplace_back(flat.begin() + seg.offset, flat.begin() + seg.offset + seg.size);
  }
  return params;
}

// The exact B_simple of the finite dataset for `linear:d-1` at weights w and bias c, with the
// loss r^2 / 2, r = x.w + c - y: per-example gradients g_n = (x_n, 1) r_n, so
// tr(Sigma) = mean |g_n|^2 - |G|^2 = mean (|x_n|^2 + 1) r_n^2 - |G|^2.
inline double dataset_b_simple_at(const data::Dataset& d, const std::vector<float>& w, double c) {
  std::vector<double> G(static_cast<std::size_t>(d.dim + 1), 0.0);
  double mean_sq = 0.0;
  for (std::int64_t n = 0; n < d.n; ++n) {
    double r = c - d.targets[n], x_sq = 0.0;
    for (std::int64_t j = 0; j < d.dim; ++j) r += double(d.x[n * d.dim + j]) * w[j];
    for (std::int64_t j = 0; j < d.dim; ++j) {
      const double x = d.x[n * d.dim + j];
      G[j] += x * r;
      x_sq += x * x;
    }
    G[d.dim] += r;
    mean_sq += (x_sq + 1.0) * r * r;
  }
  double G_sq = 0.0;
  for (double& g : G) G_sq += (g / d.n) * (g / d.n);
  mean_sq /= d.n;
  return (mean_sq - G_sq) / G_sq;
}

// Synthetic regression with the `linear:d-1` model (weights and bias) at w = 0, c = 0.
// Per-example gradient g = (x, 1) r with r = x.delta - s eps, delta = w - w* = -w*.
// G = (delta, 0); Sigma = (|delta|^2 + s^2) I_d + delta delta^T on the weights (Isserlis) and
// Var(r) = |delta|^2 + s^2 on the bias (odd moments vanish, so no cross terms), hence
//   tr(Sigma) = (d + 2)|delta|^2 + (d + 1) s^2 and B_simple = (d + 1)(1 + s^2/|delta|^2) + 1.
// (trainer/data/synthetic.hpp's form is for weights only: d in place of d + 1.)
inline double b_simple_with_bias_at_zero(const std::vector<float>& w_star, double s) {
  double delta_sq = 0.0;
  for (float w : w_star) delta_sq += static_cast<double>(w) * w;
  const double d = static_cast<double>(w_star.size());
  return (d + 1.0) * (1.0 + s * s / delta_sq) + 1.0;
}

// The exact B_simple of the finite dataset at w = 0, c = 0 (what the estimators target):
// per-example gradients g_n = -(x_n, 1) y_n, so |g_n|^2 = (|x_n|^2 + 1) y_n^2.
inline double dataset_b_simple_at_zero(const data::Dataset& d) {
  std::vector<double> G(static_cast<std::size_t>(d.dim + 1), 0.0);
  double mean_sq = 0.0;
  for (std::int64_t n = 0; n < d.n; ++n) {
    const double y = d.targets[n];
    double x_sq = 0.0;
    for (std::int64_t j = 0; j < d.dim; ++j) {
      const double x = d.x[n * d.dim + j];
      G[j] -= x * y;
      x_sq += x * x;
    }
    G[d.dim] -= y;
    mean_sq += (x_sq + 1.0) * y * y;
  }
  double G_sq = 0.0;
  for (double& g : G) G_sq += (g / d.n) * (g / d.n);
  mean_sq /= d.n;
  return (mean_sq - G_sq) / G_sq;  // population (finite-set) tr(Sigma) / |G|^2
}

inline std::string synthetic_toml(int seed, std::int64_t global_batch, std::int64_t micro_batch,
                                  std::int64_t steps, double ema, double lr = 1e-30,
                                  std::int64_t every = 1, std::int64_t window_steps = 100) {
  return "[model]\nspec = \"linear:32-1\"\ninit = \"zero\"\n"
         "[data]\ndataset = \"synthetic-regression\"\nvalidation_size = 0\n"
         "synthetic.examples = 65536\nsynthetic.dim = 32\nsynthetic.noise = 2.0\n"
         "[train]\nglobal_batch = " +
         std::to_string(global_batch) + "\nmicro_batch = " + std::to_string(micro_batch) +
         "\nsteps = " + std::to_string(steps) +
         "\neval_every = 100000\nlog_every = 100000\nthreads = 1\nseed = " + std::to_string(seed) +
         "\n[optimizer]\nname = \"sgd\"\nlr = " +
         [lr] {
           std::ostringstream text;
           text << std::setprecision(17) << lr;
           return text.str();
         }() +
         "\nmomentum = 0.0\n"
         "[noise]\nenabled = true\nevery = " +
         std::to_string(every) + "\nwindow_steps = " + std::to_string(window_steps) +
         "\nestimator = \"both\"\nema = " + std::to_string(ema) + "\n";
}

}  // namespace lbt::test
