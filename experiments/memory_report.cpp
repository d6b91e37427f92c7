// `lbt memory`'s report and probes; see memory_report.hpp.
#include "experiments/memory_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/rng.hpp"
#include "experiments/child_process.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/train_run.hpp"
#include "optim/optimizer_options.hpp"

namespace lbt::experiments {
namespace {

namespace fs = std::filesystem;

// The run at global batch B (0: the config's own) on `workers` ranks, resolved as lbt train
// resolves it, so micro-batch and accumulation are the trainer's.
trainer::RunConfig resolve_at(const MemoryOptions& o, std::int64_t B, int workers) {
  std::vector<std::string> sets = o.sets;
  if (B > 0) sets.push_back("train.global_batch=" + std::to_string(B));
  Config config = load_config(o.config_path, sets, nullptr);
  return trainer::resolve_run_config(config, workers);
}

int threads_of(const trainer::TrainConfig& cfg, int workers) {
  return cfg.threads > 0 ? cfg.threads : default_threads(workers);
}

// The model `lbt train` builds for `cfg` on these examples, parameters allocated.
std::unique_ptr<nn::Model> build_model(const trainer::TrainConfig& cfg,
                                       const data::Dataset& train) {
  auto model = cfg.model_layers.empty()
                   ? nn::Model::from_spec(cfg.model_spec, cfg.init, train.shape)
                   : nn::Model::from_layers(cfg.model_layers, cfg.init, train.shape);
  auto rng = make_rng(cfg.seed, RngStream::kInit);
  model->build(rng);
  return model;
}

// The micro-batches to probe: those of the requested global batches on one rank, or the
// config's micro-batch x 1, 4, 16 (growing, so the activations come to matter).
std::vector<std::int64_t> probe_batches(const MemoryOptions& o, std::int64_t micro) {
  std::set<std::int64_t> batches;
  for (std::int64_t B : o.global_batches) batches.insert(B);
  if (batches.empty()) batches = {micro, 4 * micro, 16 * micro};
  return {batches.begin(), batches.end()};
}

// `lbt train` at micro-batch b for 2 steps into `dir`; its peak resident set in bytes.
std::int64_t probe_once(const MemoryOptions& o, std::int64_t b, const fs::path& dir) {
  std::vector<std::string> args{"train",
                                "--config",
                                o.config_path.string(),
                                "--quiet",
                                "--overwrite",
                                "--out",
                                (dir / ("b" + std::to_string(b))).string()};
  std::vector<std::string> sets = o.sets;
  for (const std::string s : {"train.global_batch=", "train.micro_batch="})
    sets.push_back(s + std::to_string(b));
  // A constant LR: the schedule allocates nothing, and a preset's warmup outlasts 2 steps.
  sets.insert(sets.end(),
              {"train.accum_steps=0", "train.steps=2", "schedule.recipe=none",
               "schedule.scaling=none", "schedule.warmup=0", "schedule.decay=constant"});
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  const fs::path log = dir / ("b" + std::to_string(b) + ".log");
  const ChildExit e = wait_child(spawn_logged(self_executable(), args, log));
  if (e.exit_code != 0) {
    throw Error("lbt memory --probe: lbt train at micro-batch " + std::to_string(b) + " failed (" +
                    (e.signal ? "signal " + std::to_string(e.signal)
                              : "exit " + std::to_string(e.exit_code)) +
                    "): " + tail_lines(log, 3),
                "run it alone: lbt train " + o.config_path.string() +
                    " --set train.global_batch=" + std::to_string(b));
  }
  return e.max_rss_bytes;
}

// Micro-batch -> measured peak, each in a fresh process (a peak only grows within one).
std::vector<std::pair<std::int64_t, std::int64_t>> run_probes(const MemoryOptions& o,
                                                              std::int64_t micro) {
  const fs::path dir = fs::temp_directory_path() / ("lbt-memory-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::vector<std::pair<std::int64_t, std::int64_t>> peaks;
  try {
    for (std::int64_t b : probe_batches(o, micro)) peaks.emplace_back(b, probe_once(o, b, dir));
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  return peaks;
}

}  // namespace

bool MemoryReport::probes_ok() const {
  return std::all_of(probes.begin(), probes.end(),
                     [&](const ProbeResult& p) { return std::abs(p.ratio() - 1.0) <= tolerance; });
}

MemoryReport memory_report(const MemoryOptions& o) {
  const std::int64_t runtime =
      o.runtime_bytes >= 0 ? o.runtime_bytes : trainer::resident_bytes_now();
  const trainer::RunConfig base = resolve_at(o, 0, o.workers);
  std::vector<std::pair<std::int64_t, std::int64_t>> peaks;
  if (o.probe) peaks = run_probes(o, base.train.micro_batch);

  MemoryReport r;
  r.workers = o.workers;
  r.threads = threads_of(base.train, o.workers);
  set_num_threads(r.threads);
  r.accum_steps = base.train.accum_steps;
  r.budget = o.memory;
  r.tolerance = o.tolerance;
  const data::Splits splits = data::load_splits(base.train.data, base.train.seed);
  auto model = build_model(base.train, splits.train);
  r.model = base.train.model_name() + " (" + model->describe() + ")";
  r.optimizer = optim::make_optimizer(base.optimizer, 1)->describe();
  const trainer::MemoryModel m =
      trainer::memory_model(base, *model, splits, o.workers, r.threads, runtime);
  r.num_params = m.num_params;
  r.optimizer_buffers = m.optimizer_buffers;
  r.global_batches = o.global_batches;
  if (r.global_batches.empty()) r.global_batches.push_back(base.train.global_batch);
  for (std::int64_t B : r.global_batches)
    r.estimates.push_back(
        trainer::estimate_memory(m, resolve_at(o, B, o.workers).train.micro_batch));
  // The slope where every part is linear: past the evaluation batch and the page rounding.
  const std::int64_t far = std::max<std::int64_t>(m.eval_batch, 1) * 64;
  r.per_example =
      (trainer::estimate_memory(m, 2 * far).total() - trainer::estimate_memory(m, far).total()) /
      far;
  r.max_micro_batch = trainer::largest_micro_batch(m, o.memory, false);
  r.max_micro_batch_sharded = trainer::largest_micro_batch(m, o.memory, true);
  r.train_examples_per_rank = splits.train.n / o.workers;

  if (!peaks.empty()) {
    // The probes ran one rank each: estimate them so.
    const trainer::MemoryModel one =
        trainer::memory_model(base, *model, splits, 1, threads_of(base.train, 1), runtime);
    for (const auto& [b, peak] : peaks)
      r.probes.push_back({b, trainer::estimate_memory(one, b).total(), peak});
  }
  return r;
}

namespace {

std::string row(const std::string& name, const std::vector<std::int64_t>& values) {
  char head[40];
  std::snprintf(head, sizeof head, "  %-30s", name.c_str());
  std::string line = head;
  for (std::int64_t v : values) {
    char cell[24];
    std::snprintf(cell, sizeof cell, "%14s", trainer::format_bytes(v).c_str());
    line += cell;
  }
  return line + "\n";
}

// One row per part: `part` picks it from each estimate.
template <class Part>
std::string part_row(const MemoryReport& r, const std::string& name, Part part) {
  std::vector<std::int64_t> values;
  for (const auto& e : r.estimates) values.push_back(part(e));
  return row(name, values);
}

std::string parts_table(const MemoryReport& r) {
  std::ostringstream ss;
  char head[40];
  std::snprintf(head, sizeof head, "  %-30s", "global batch / micro-batch");
  ss << head;
  for (std::size_t i = 0; i < r.estimates.size(); ++i) {
    const std::string cell =
        std::to_string(r.global_batches[i]) + " / " + std::to_string(r.estimates[i].micro_batch);
    char buf[24];
    std::snprintf(buf, sizeof buf, "%14s", cell.c_str());
    ss << buf;
  }
  ss << "\n";
  using E = trainer::MemoryEstimate;
  ss << part_row(r, "runtime (measured)", [](const E& e) { return e.runtime; })
     << part_row(r, "data (train+validation+test)", [](const E& e) { return e.data; })
     << part_row(r, "data while loading (extra)", [](const E& e) { return e.load_extra; })
     << part_row(r, "parameters", [](const E& e) { return e.parameters; })
     << part_row(r, "gradients", [](const E& e) { return e.gradients; })
     << part_row(r, "optimizer state, replicated", [](const E& e) { return e.optimizer_state; })
     << part_row(r, "optimizer state, ZeRO-1", [](const E& e) { return e.optimizer_state_sharded; })
     << part_row(r, "snapshots (target bracket)", [](const E& e) { return e.snapshots; })
     << part_row(r, "activations + their grads", [](const E& e) { return e.activations; })
     << part_row(r, "layer workspaces", [](const E& e) { return e.workspace; })
     << part_row(r, "prefetch ring", [](const E& e) { return e.prefetch; })
     << part_row(r, "evaluation batch", [](const E& e) { return e.evaluation; })
     << part_row(r, "total, replicated (lbt today)", [](const E& e) { return e.total(false); })
     << part_row(r, "total, ZeRO-1 sharded state", [](const E& e) { return e.total(true); });
  return ss.str();
}

}  // namespace

std::string format_memory_report(const MemoryReport& r) {
  std::ostringstream ss;
  ss << "model: " << r.model << ", " << r.num_params << " parameters\n"
     << "optimizer: " << r.optimizer << ", " << r.optimizer_buffers
     << " state buffer(s) of the parameters' size\n"
     << "bytes per rank, " << r.workers << " worker(s), " << r.threads << " thread(s) each:\n"
     << parts_table(r)
     << "  per example past the evaluation batch: " << trainer::format_bytes(r.per_example) << "\n"
     << format_memory_fit(r);
  if (!r.probes.empty()) {
    ss << "probe (lbt train, 1 rank, 2 steps; peak RSS vs estimate, tolerance "
       << static_cast<int>(std::lround(r.tolerance * 100)) << "%):\n";
    for (const ProbeResult& p : r.probes) {
      char line[160];
      std::snprintf(
          line, sizeof line, "  micro-batch %-8lld estimate %12s  measured %12s  ratio %.3f%s\n",
          static_cast<long long>(p.micro_batch), trainer::format_bytes(p.estimate).c_str(),
          trainer::format_bytes(p.measured).c_str(), p.ratio(),
          std::abs(p.ratio() - 1.0) <= r.tolerance ? "" : "  OFF");
      ss << line;
    }
  }
  return ss.str();
}

std::string format_memory_summary(const MemoryReport& r) {
  std::ostringstream ss;
  for (std::size_t i = 0; i < r.estimates.size(); ++i) {
    const trainer::MemoryEstimate& e = r.estimates[i];
    ss << "per rank at global batch " << r.global_batches[i] << " (micro-batch " << e.micro_batch
       << ", " << r.workers << " worker(s)): " << trainer::format_bytes(e.total(false))
       << " (optimizer state replicated, as lbt trains), " << trainer::format_bytes(e.total(true))
       << " (ZeRO-1 sharded)\n";
  }
  return ss.str() + format_memory_fit(r);
}

std::string format_memory_fit(const MemoryReport& r) {
  std::ostringstream ss;
  const std::int64_t per_step = r.workers * r.accum_steps;
  ss << "largest micro-batch in " << trainer::format_bytes(r.budget)
     << " per rank: " << r.max_micro_batch << " (optimizer state replicated, as lbt trains), "
     << r.max_micro_batch_sharded << " (ZeRO-1 sharded)\n"
     << "  global batch it allows: " << r.max_micro_batch * per_step << " = " << r.workers
     << " worker(s) x " << r.max_micro_batch << " x accum " << r.accum_steps << "\n";
  if (r.max_micro_batch * r.accum_steps > r.train_examples_per_rank) {
    ss << "  (past the " << r.train_examples_per_rank
       << " training examples per rank: the data, not the memory, bound this batch)\n";
  }
  return ss.str();
}

}  // namespace lbt::experiments
