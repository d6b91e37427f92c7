// `lbt memory`'s report and probes; see memory_report.hpp.
#include "experiments/memory/memory_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/rng.hpp"
#include "core/sizes.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/memory/memory_probe.hpp"
#include "experiments/train_run.hpp"
#include "optim/optimizer_options.hpp"

namespace lbt::experiments {
namespace {

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

// N ranks at once need N times a rank's memory: refuse probes this machine cannot hold.
void check_probes_fit(const trainer::MemoryModel& m, const std::vector<std::int64_t>& batches) {
  const std::int64_t available = trainer::available_memory_bytes();
  const std::int64_t b = *std::max_element(batches.begin(), batches.end());
  const std::int64_t need = m.workers * trainer::estimate_memory(m, b).total();
  if (available < 0 || need <= available) return;
  throw ConfigError("lbt memory --probe: " + std::to_string(m.workers) + " ranks at micro-batch " +
                        std::to_string(b) + " need about " + trainer::format_bytes(need) +
                        ", more than the " + trainer::format_bytes(available) +
                        " this machine has available",
                    "probe fewer --workers or smaller -b");
}

// The probes' estimates, rank by rank (each rank's runtime and share of the reduction).
std::vector<ProbeResult> probe_results(trainer::MemoryModel m, const std::vector<ProbePeaks>& peaks,
                                       const std::vector<std::int64_t>& mpi_runtime) {
  std::vector<ProbeResult> results;
  for (const ProbePeaks& p : peaks) {
    ProbeResult r{p.micro_batch, {}, p.per_rank};
    for (int rank = 0; rank < std::ssize(p.per_rank); ++rank) {
      m.rank = rank;
      if (!mpi_runtime.empty()) m.runtime_bytes = mpi_runtime[static_cast<std::size_t>(rank)];
      r.estimate.push_back(trainer::estimate_memory(m, p.micro_batch).total());
    }
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

bool MemoryReport::probes_ok() const {
  for (const ProbeResult& p : probes)
    for (std::size_t r = 0; r < p.measured.size(); ++r)
      if (!p.within(r, tolerance)) return false;
  return true;
}

MemoryReport memory_report(const MemoryOptions& o) {
  const std::int64_t runtime =
      o.runtime_bytes >= 0 ? o.runtime_bytes : trainer::resident_bytes_now();
  // At the first -b where one is given: the config's own batch need not divide over --workers
  // (-b 1026 --workers 3 was refused for the config's 128). A probe's -b are micro-batches.
  const bool batch_given = !o.global_batches.empty() && !o.probe;
  const trainer::RunConfig base =
      resolve_at(o, batch_given ? o.global_batches.front() : 0, o.workers);
  const ProbeSetup setup{o.config_path, o.sets, o.workers, threads_of(base.train, o.workers)};
  const std::vector<std::int64_t> batches = probe_batches(o, base.train.micro_batch);
  // One rank's probe forks this process: before it loads anything (a child's peak would
  // otherwise start from its parent's). mpirun's ranks start from mpirun's own.
  std::vector<ProbePeaks> peaks;
  if (o.probe && o.workers == 1) peaks = run_probes(setup, batches);

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
  trainer::MemoryModel m =
      trainer::memory_model(base, *model, splits, o.workers, r.threads, runtime);
  // Several ranks: refuse probes the machine cannot hold before launching anything, then
  // measure an MPI rank's baseline (the largest rank's) for the runtime part.
  if (o.probe && o.workers > 1) check_probes_fit(m, batches);
  std::vector<std::int64_t> mpi_runtime;
  if (o.workers > 1 && (o.measure_mpi_runtime || o.probe)) {
    mpi_runtime = measure_mpi_runtime(setup);
    m.runtime_bytes = *std::max_element(mpi_runtime.begin(), mpi_runtime.end());
  }
  r.mpi_runtime_measured = !mpi_runtime.empty();
  r.num_params = m.num_params;
  r.optimizer_buffers = m.optimizer_buffers;
  r.global_batches = o.global_batches;
  if (r.global_batches.empty()) r.global_batches.push_back(base.train.global_batch);
  if (o.probe && !o.global_batches.empty()) {
    // A probe's -b are micro-batches (a rank's, no accumulation): the table shows the runs the
    // probes make, B x workers. It read -b 256 on 2 workers as the global batch (micro 128)
    // beside a probe at micro-batch 256, and refused a -b the ranks do not divide.
    r.global_batches.clear();
    for (std::int64_t b : o.global_batches) {
      r.global_batches.push_back(b * o.workers);
      r.estimates.push_back(trainer::estimate_memory(m, b));
    }
  } else {
    for (std::int64_t B : r.global_batches)
      r.estimates.push_back(
          trainer::estimate_memory(m, resolve_at(o, B, o.workers).train.micro_batch));
  }
  // The slope where every part is linear: past the evaluation batch and the page rounding.
  const std::int64_t far = std::min(std::max<std::int64_t>(m.eval_batch, 1) * 64,
                                    trainer::largest_countable_micro_batch(m) / 2);
  r.per_example =
      (trainer::estimate_memory(m, 2 * far).total() - trainer::estimate_memory(m, far).total()) /
      far;
  r.max_micro_batch = trainer::largest_micro_batch(m, o.memory, false);
  r.max_micro_batch_sharded = trainer::largest_micro_batch(m, o.memory, true);
  r.train_examples_per_rank = splits.train.n / o.workers;

  if (o.probe && o.workers > 1) peaks = run_probes(setup, batches);
  if (!peaks.empty()) {
    // One rank's probe runs without MPI: estimate it with this process's runtime.
    trainer::MemoryModel probed = m;
    if (o.workers == 1) probed.runtime_bytes = runtime;
    r.probes = probe_results(probed, peaks, mpi_runtime);
  }
  return r;
}

namespace {

// Right-aligned in 14 columns, or wider: a cell is never cut (a 19-digit batch size).
std::string right_aligned(const std::string& text) {
  return std::string(text.size() < 14 ? 14 - text.size() : 1, ' ') + text;
}

std::string row(const std::string& name, const std::vector<std::int64_t>& values) {
  char head[40];
  std::snprintf(head, sizeof head, "  %-30s", name.c_str());
  std::string line = head;
  for (std::int64_t v : values) line += right_aligned(trainer::format_bytes(v));
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
    ss << right_aligned(std::to_string(r.global_batches[i]) + " / " +
                        std::to_string(r.estimates[i].micro_batch));
  }
  ss << "\n";
  using E = trainer::MemoryEstimate;
  ss << part_row(r, r.mpi_runtime_measured ? "runtime (measured, MPI rank)" : "runtime (measured)",
                 [](const E& e) { return e.runtime; })
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
     << part_row(r, "communication (shm reduction)", [](const E& e) { return e.communication; })
     << part_row(r, "total, replicated (lbt today)", [](const E& e) { return e.total(false); })
     << part_row(r, "total, ZeRO-1 sharded state", [](const E& e) { return e.total(true); })
     // The rows do not add up to it: loading's copy is freed before training allocates.
     << "  (each total: runtime + data + the larger of the load copy and the training parts)\n";
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
    ss << "probe (lbt train, " << r.workers << " rank(s), 2 steps; each rank's peak RSS vs its "
       << "estimate, tolerance " << 100 * r.tolerance << "% or "  // 0.4%, not a rounded 0%
       << trainer::format_bytes(kProbeSlackBytes) << "):\n";
    for (const ProbeResult& p : r.probes) {
      for (std::size_t k = 0; k < p.measured.size(); ++k) {
        char line[192];
        std::snprintf(
            line, sizeof line,
            "  micro-batch %-8lld rank %-3zu estimate %12s  measured %12s  ratio %.3f%s\n",
            static_cast<long long>(p.micro_batch), k, trainer::format_bytes(p.estimate[k]).c_str(),
            trainer::format_bytes(p.measured[k]).c_str(), p.ratio(k),
            p.within(k, r.tolerance) ? "" : "  OFF");
        ss << line;
      }
    }
  }
  if (r.workers > 1 && !r.mpi_runtime_measured)
    ss << "(runtime: this process's, without MPI's own memory; lbt memory --workers N "
          "measures an MPI rank's)\n";
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
  // A -b the data cannot fill is estimated (the memory alone), but lbt train refuses it.
  const std::int64_t examples = r.train_examples_per_rank * r.workers;
  for (const std::int64_t B : r.global_batches) {
    if (B > examples)
      ss << "note: global batch " << B << " is past the " << examples
         << " training examples: lbt train refuses it (the estimate above is its memory alone)\n";
  }
  const auto allows = checked_product({r.max_micro_batch, r.workers, r.accum_steps});
  const auto per_rank = checked_product({r.max_micro_batch, r.accum_steps});
  ss << "largest micro-batch in " << trainer::format_bytes(r.budget)
     << " per rank: " << r.max_micro_batch << " (optimizer state replicated, as lbt trains), "
     << r.max_micro_batch_sharded << " (ZeRO-1 sharded)\n"
     << "  global batch it allows: "
     << (allows ? std::to_string(*allows) : std::string("past 2^63")) << " = " << r.workers
     << " worker(s) x " << r.max_micro_batch << " x accum " << r.accum_steps << "\n";
  if (!per_rank || *per_rank > r.train_examples_per_rank) {
    ss << "  (past the " << r.train_examples_per_rank
       << " training examples per rank: the data, not the memory, bound this batch)\n";
  }
  return ss.str();
}

}  // namespace lbt::experiments
