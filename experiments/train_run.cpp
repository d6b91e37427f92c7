// run_training; see train_run.hpp.
#include "experiments/train_run.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

#include "core/device.hpp"
#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/rng.hpp"
#include "experiments/branch_start.hpp"
#include "experiments/child_process.hpp"
#include "experiments/hessian_probe.hpp"
#include "experiments/json_file.hpp"
#include "experiments/output_kind.hpp"
#include "experiments/rank_agreement.hpp"
#include "experiments/run_check.hpp"
#include "experiments/run_checkpoint.hpp"
#include "experiments/run_lock.hpp"
#include "experiments/run_summary.hpp"
#include "experiments/train_device.hpp"
#include "experiments/trial_readings.hpp"
#include "nn/model.hpp"
#include "trainer/batch_steps.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/comm/node_ranks.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/config/train_keys.hpp"
#include "trainer/data/load.hpp"
#include "trainer/device_support.hpp"
#include "trainer/loop.hpp"
#include "trainer/memory_estimate.hpp"
#include "trainer/noise_log.hpp"
#include "trainer/sharded_step.hpp"
#include "trainer/target_reading.hpp"
#include "trainer/task.hpp"

namespace lbt::experiments {

namespace {

// RunIdentity::data: each file's fingerprint and the path it was read from.
std::vector<std::string> data_prints(const std::vector<data::DataFile>& files) {
  std::vector<std::string> lines = data_fingerprints(files);
  for (std::size_t i = 0; i < files.size(); ++i) lines[i] += " " + files[i].path.string();
  return lines;
}

// The run's model for the data's examples (run_check.hpp: the same checks as --check), its
// random streams seeded for this rank.
std::unique_ptr<nn::Model> make_model(const trainer::TrainConfig& cfg, const data::Splits& splits,
                                      int rank) {
  auto model = model_for_data(cfg, splits.train);
  model->seed_streams(cfg.seed, static_cast<std::uint64_t>(rank));
  return model;
}

// The noise estimators this model and layout allow: an impossible request stops here, before
// any file is written (choose_method's ConfigError names the fix).
noise::OnlineOptions noise_options_for(const trainer::RunConfig& run, const RunOptions& options,
                                       const comm::Communicator& comm, const nn::Model& model) {
  noise::OnlineOptions noise_options = run.noise;
  noise_options.layout_note = options.noise_layout_note;
  // The method line names the first steps' batches; a varying batch moves them (lbt noise's
  // "big batch = the global batch of 32" beside steps at 48 said nothing, 2026-11-29 audit).
  if (run.train.adaptive.enabled) {
    noise_options.layout_note +=
        std::string(noise_options.layout_note.empty() ? "" : "; ") +
        "the batch varies (train.batch_schedule): the method's batches are the first steps'; "
        "each step is measured at its own global batch and accumulation count";
  }
  noise_options.announce = !options.noise_report;
  if (noise_options.enabled) {
    noise::choose_method(noise_options, comm.size(), run.train.micro_batch, run.train.accum_steps,
                         trainer::per_example_support(model, run.train.device));
  }
  return noise_options;
}

// Every rank loads the same checkpoint (rank 0 wrote it). Returns whether one was restored.
bool resume_run(const std::filesystem::path& run_dir, const RunOptions& options,
                const RunIdentity& identity, const comm::Communicator& comm, nn::Model& model,
                optim::Optimizer& optimizer, trainer::LoopState& resume_from, DirLock& lock) {
  if (options.resume == Resume::kNo) return false;
  refuse_linked_checkpoints(run_dir);  // every rank reads them
  // Before its checkpoint is read: a run still training there keeps its directory.
  if (comm.rank() == 0 && trainer::RunDirectory::holds_run(run_dir))
    lock = lock_run_directory(run_dir, options.noise_report ? "lbt noise" : "lbt train");
  const bool resumed = restore_run_checkpoint(run_dir, resume_from, model, optimizer, identity);
  if (resumed && comm.rank() == 0) {
    std::fprintf(stderr, "note: resuming %s from its checkpoint of step %lld\n", run_dir.c_str(),
                 static_cast<long long>(resume_from.step));
  }
  if (!resumed && options.resume == Resume::kRequired) nothing_to_resume(run_dir);
  // --resume auto starts fresh where a run has no checkpoint; where it has some, all damaged,
  // starting fresh replaced the run's logs and those checkpoints (2026-11-29 audit).
  if (!resumed && !trainer::list_checkpoints(run_dir / "checkpoints").empty())
    nothing_to_resume(run_dir);
  return resumed;
}

// The sharded step (trainer/sharded_step.hpp): with an elementwise optimizer on one node, the
// parameters are kept once, in memory every rank maps, and each rank updates its range. Not
// with a probe: `lbt noise` perturbs the parameters rank by rank.
struct Sharding {
  trainer::ParamRange my_range;
  bool shared_params = false;
};

Sharding share_parameters(comm::Communicator& comm, nn::Model& model,
                          const optim::Optimizer& optimizer, bool own_copies, bool local_sgd) {
  const std::size_t num_params = model.store().num_params();
  Sharding sharding{{0, num_params}, false};
  if (comm.size() > 1 && optimizer.elementwise() && !own_copies && !local_sgd) {
    comm::LentMemory shared = comm.shared_parameter_memory(num_params);
    if (!shared.floats.empty()) {
      model.place_params(shared.floats, std::move(shared.owner), comm.rank() == 0);
      comm.barrier();  // rank 0's values are in before any rank reads them
      sharding.shared_params = true;
      sharding.my_range = trainer::rank_range(num_params, comm.size(), comm.rank());
    }
  }
  return sharding;
}

// Saves the run's state when the loop asks (every checkpoint_every steps, and at the end).
std::function<void(const trainer::LoopState&)> checkpoint_saver(
    const std::filesystem::path& run_dir, const RunIdentity& identity,
    const trainer::TrainConfig& cfg, std::int64_t total_steps, const Sharding& sharding,
    comm::Communicator& comm, nn::Model& model, optim::Optimizer& optimizer) {
  const std::size_t num_params = model.store().num_params();
  // The config, communicator, model and optimizer outlive the loop that calls this.
  return [run_dir, identity, total_steps, sharding, num_params, cfg = &cfg, comm = &comm,
          model = &model, optimizer = &optimizer](const trainer::LoopState& state) {
    const bool final_state = state.step >= total_steps || state.outcome.status != "running";
    // An interrupted run always saves its state: that is what --resume continues from.
    if (final_state && !cfg->checkpoint_final && state.outcome.status != "interrupted") return;
    // Each rank's optimizer state is current on its own range only.
    if (sharding.shared_params)
      trainer::gather_sharded_state(*optimizer, *comm, num_params, sharding.my_range);
    // So is the below-target copy's, which the replay of a resumed run starts from (until
    // 2026-11-29 it was dropped, and a resumed run could miss the crossing the run had found).
    // Its optimizer buffers alone are copied to gather: copying the loop's state and the whole
    // below-target state cost every rank parameters, EMA and buffers again (~50 MiB for the
    // CNN, the peak of a 2-rank run, 2026-11-29 audit).
    std::vector<std::vector<float>> below_buffers;
    if (sharding.shared_params && state.below_target) {
      below_buffers = state.below_target->model.optimizer_buffers;
      trainer::gather_sharded_buffers(below_buffers, *comm, num_params, sharding.my_range);
    }
    if (comm->rank() != 0) return;
    save_run_checkpoint(run_dir, state, *model, *optimizer, identity, cfg->checkpoint_keep,
                        below_buffers.empty() ? nullptr : &below_buffers);
  };
}

// The run directory, on rank 0 only (the others write nothing), with its config and a pending
// summary; `lock` holds it (run_lock.hpp) from before its first write to the run's end.
std::unique_ptr<trainer::RunDirectory> open_run_dir(const RunResult& result,
                                                    const RunOptions& options, bool resumed,
                                                    std::int64_t resume_step, const Config& config,
                                                    const SummaryParts& summary,
                                                    std::int64_t total_steps, int rank,
                                                    DirLock& lock) {
  if (rank != 0) return nullptr;
  if (!resumed && options.overwrite) refuse_replacing_a_member_run(result.run_dir);
  auto run_dir = resumed ? std::make_unique<trainer::RunDirectory>(
                               trainer::RunDirectory::resume(result.run_dir, resume_step))
                         : open_new_run_directory(
                               result.run_dir, options.overwrite || options.resume != Resume::kNo,
                               lock, options.noise_report ? "lbt noise" : "lbt train");
  // The summary first: it marks the directory as lbt's run, which --overwrite may replace.
  trainer::TrainOutcome pending;
  pending.total_steps = total_steps;
  run_dir->write_summary(summary.of(pending));
  run_dir->write_config(config.resolved_toml());
  return run_dir;
}

// Each rank's peak resident set so far (getrusage's ru_maxrss), in rank order. Collective.
nlohmann::json peak_rss_per_rank(comm::Communicator& comm) {
  std::vector<double> peaks(static_cast<std::size_t>(comm.size()), 0.0);
  peaks[static_cast<std::size_t>(comm.rank())] =
      static_cast<double>(trainer::peak_resident_bytes());
  comm.allreduce(peaks, comm::ReduceOp::kSum);  // exact: bytes < 2^53
  nlohmann::json out = nlohmann::json::array();
  for (double p : peaks) out.push_back(static_cast<std::int64_t>(p));
  return out;
}

// Trains; summary.json: the outcome and each rank's peak RSS (lbt memory --probe), or the error.
trainer::TrainOutcome train_with_summary(trainer::TrainContext& ctx, trainer::RunDirectory* run_dir,
                                         const SummaryParts& summary) {
  trainer::TrainOutcome outcome;
  try {
    outcome = trainer::train(ctx);
  } catch (const std::exception& e) {
    if (run_dir) {
      trainer::TrainOutcome failed;
      failed.status = "failed";
      failed.total_steps = ctx.total_steps;
      auto s = summary.of(failed);
      // How far the loop got is lost with its exception (metrics.jsonl has it): unknown, not 0.
      for (const char* unknown : {"steps", "examples", "last_loss", "wall_time_s", "samples_per_s",
                                  "samples_per_s_windows"})
        s[unknown] = nullptr;
      s["error"] = e.what();
      try {  // the run's error is the one to report: on a full disk this fails too, and hid it
        run_dir->write_summary(s);
      } catch (const std::exception&) {
      }
    }
    throw;
  }
  const nlohmann::json peaks = peak_rss_per_rank(ctx.comm);
  if (run_dir) {
    nlohmann::json s = summary.of(outcome);
    s["peak_rss_bytes"] = peaks;
    run_dir->write_summary(s);
  }
  return outcome;
}

// A target the untrained model already meets (an accuracy at chance, a loss above the initial
// one) is met at the first evaluation: steps to it measure nothing, and a sweep's fit would read
// every batch at one step. Refused before any file is written, as an --exec trial meeting it at
// step 0 fails (exec_trial.cpp). Until 2026-11-29 such a run read "target reached at step 1;
// not met at step 0", the start never evaluated. Collective: every rank evaluates its share.
void refuse_target_met_at_start(const trainer::TrainConfig& cfg, nn::Model& model,
                                const data::Dataset& validation, comm::Communicator& comm) {
  if (!cfg.target.enabled() || !cfg.branch_from.empty()) return;
  const trainer::Evaluation e = trainer::evaluate(model, validation, comm, cfg.eval_batch);
  const double value = e.metric(cfg.target.metric);
  if (e.count == 0 || !cfg.target.met(value)) return;
  char measured[96];
  std::snprintf(measured, sizeof measured, "%s %.4g on %lld validation examples",
                cfg.target.metric.c_str(), value, static_cast<long long>(e.count));
  throw ConfigError("the target " + cfg.target.text() + " is met at step 0, before any training (" +
                        measured + "): steps to it would measure nothing",
                    "tighten train.target, or train without one (--set train.target=\"\")");
}

}  // namespace

std::filesystem::path run_directory_path(const RunOptions& options, const Config& config) {
  return options.out.empty() ? trainer::default_run_path(config.source()) : options.out;
}

RunResult run_training(Config& config, const RunOptions& options) {
  const std::string backend = config.get_string(Schema::in(trainer::train_keys(), "comm.backend"));
  return run_training(config, options, comm::process_communicator({backend}));
}

RunResult run_training(Config& config, const RunOptions& options, comm::Communicator& comm) {
  // ---- read and validate every key before any collective or any file is written ----
  const trainer::RunConfig run = trainer::resolve_run_config(config, comm.size());
  const trainer::TrainConfig& cfg = run.train;
  // B_noise probes every noise.hessian.every steps (sweep trials too), unless the caller probes
  RunOptions::Probe probe = options.probe;
  if (run.noise.enabled && !probe) probe = hessian_probe(read_hessian_options(config), {});
  // Before any other collective: ranks started with different configs stop here, all of them.
  check_ranks_agree(comm, config.resolved_toml(),
                    {cfg.global_batch, cfg.micro_batch, cfg.accum_steps});
  check_data_agrees(comm, data::data_files(cfg.data));
  if (comm.size() == 1 && cfg.local_sgd.enabled()) {  // accepted without a word until 2026-11-29
    std::fprintf(stderr,
                 "note: train.sync_every = %lld on one process: every step is synchronous, plain "
                 "SGD (local SGD averages several ranks: mpirun -np K lbt train ...)\n",
                 static_cast<long long>(cfg.local_sgd.sync_every));
  }
  const int threads = run_threads(cfg.threads, comm.size(), comm.rank() == 0);
  set_num_threads(threads);
  check_model_spec(cfg);  // before the data load
  data::Splits splits = data::load_splits(cfg.data, cfg.seed);
  auto model = make_model(cfg, splits, comm.rank());
  check_activations(cfg, *model, splits.validation.n, comm.size());  // before any allocation
  check_data_suits_config(cfg, splits);
  data::ShardedSampler sampler(splits.train.n, cfg.data_order_seed(), comm.size(), comm.rank(),
                               cfg.micro_batch, cfg.accum_steps);
  const trainer::StepBudget budget = trainer::step_budget(cfg, splits.train.n, comm.size());
  const std::int64_t total_steps = budget.total_steps;
  trainer::check_ema_horizon(cfg, total_steps, config.source_of("train.ema_horizon"));

  auto rng = make_rng(cfg.seed, RngStream::kInit);
  model->build(rng);
  const noise::OnlineOptions noise_options = noise_options_for(run, options, comm, *model);
  // Gradients where this communicator reduces them fastest (one node: shared memory). The
  // communicators reduce host memory: a backend keeping its buffers elsewhere needs its own.
  require_host_memory(model->backend(), "the communicator's gradient reduction");
  if (comm::LentMemory lent = comm.gradient_memory(model->store().num_params());
      !lent.floats.empty()) {
    model->place_grads(lent.floats, std::move(lent.owner));
  }
  optim::apply_exclusions(run.optimizer, model->store().segments());
  auto optimizer =
      optim::make_optimizer(run.optimizer, model->store().num_params(), model->backend());
  // Rank 0 speaks for all.
  // A branch (train.branch_from) continues its reference's schedule (branch_start.hpp).
  const std::vector<std::string> data = data_prints(data::data_files(cfg.data));
  const BranchOptions branch{cfg.branch_from,
                             cfg.global_batch,
                             run.schedule.scaling,
                             comm.size(),
                             splits.train.n,
                             run.noise.enabled,
                             data};
  schedules::Schedule schedule =
      cfg.branch_from.empty()
          ? trainer::run_schedule(run, budget, comm.rank() == 0 ? &std::cerr : nullptr, nullptr,
                                  options.warmup_past_run)
          : branch_schedule(branch);

  // Every rank starts from rank 0's parameters, whatever its RNG did.
  auto params = model->store().params();
  comm.broadcast(std::as_writable_bytes(params), 0);
  comm::check_identical(comm, std::as_bytes(params), "initial parameters after the broadcast");
  if (options.refuse_target_met_at_start)
    refuse_target_met_at_start(cfg, *model, splits.validation, comm);

  RunResult result;
  result.run_dir = run_directory_path(options, config);
  const RunIdentity identity{comm.size(),
                             cfg.global_batch,
                             cfg.micro_batch,
                             cfg.accum_steps,
                             threads,
                             config.resolved_toml(),
                             data};
  trainer::LoopState resume_from;
  DirLock run_lock;  // rank 0's, until the run ends
  const bool resumed = resume_run(result.run_dir, options, identity, comm, *model, *optimizer,
                                  resume_from, run_lock);
  if (!resumed && !cfg.branch_from.empty()) resume_from = start_branch(branch, *model, *optimizer);
  // The device starts from the host's state: initialised, resumed or branched.
  const std::unique_ptr<trainer::DeviceStep> device =
      make_device_step(run, comm, splits, *model, static_cast<bool>(probe));
  if (device) {
    device->push(*model, *optimizer, resume_from.ema);
    if (comm.rank() == 0) std::fprintf(stderr, "lbt: steps on %s\n", device->describe().c_str());
  }
  // A probe perturbs each rank's parameters; a device steps on its own copy of them.
  const Sharding sharding =
      share_parameters(comm, *model, *optimizer, probe || device, cfg.local_sgd.enabled());
  const SummaryParts summary{
      cfg,     model->describe(),         optimizer->describe(), comm.size(),
      threads, sampler.steps_per_epoch(), result.run_dir,        splits.validation.n};
  result.val_examples = splits.validation.n;
  result.regression = !splits.train.is_classification();
  result.log_every = cfg.log_every;
  std::unique_ptr<trainer::RunDirectory> run_dir =
      open_run_dir(result, options, resumed, resume_from.step, config, summary, total_steps,
                   comm.rank(), run_lock);

  trainer::TrainContext ctx{cfg,           *model,           *optimizer,    schedule,
                            comm,          splits,           sampler,       total_steps,
                            run_dir.get(), options.progress, noise_options,
                            /*probe=*/{},  resume_from};
  if (cfg.adaptive.enabled) ctx.lr_scaling = schedules::scaling_rule(run.schedule.scaling);
  ctx.device = device.get();
  ProbeContext probe_context{*model, splits, cfg, run_dir.get()};
  if (probe) ctx.probe = [&](std::int64_t step) { probe(step, probe_context); };
  ctx.checkpoint_every = cfg.checkpoint_every;
  ctx.checkpoint_every_seconds = cfg.checkpoint_every_seconds;
  ctx.shared_params = sharding.shared_params;
  if (sharding.shared_params)
    ctx.update_segments = trainer::clip_segments(model->store().segments(), sharding.my_range);
  ctx.checkpoint = checkpoint_saver(result.run_dir, identity, cfg, total_steps, sharding, comm,
                                    *model, *optimizer);
  if (options.after_checkpoint) {
    ctx.checkpoint = [save = std::move(ctx.checkpoint),
                      &after = options.after_checkpoint](const trainer::LoopState& state) {
      save(state);
      after(state);
    };
  }
  result.outcome = train_with_summary(ctx, run_dir.get(), summary);
  const auto final_params = model->store().params();
  // The host's ranks share one all-reduced gradient by construction; GPUs must also step alike.
  if (device && comm.size() > 1)
    comm::check_identical(comm, std::as_bytes(final_params), "final parameters of the GPU ranks");
  result.final_params.assign(final_params.begin(), final_params.end());
  return result;
}

}  // namespace lbt::experiments
