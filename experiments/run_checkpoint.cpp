// Run checkpoints; see run_checkpoint.hpp.
#include "experiments/run_checkpoint.hpp"

#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "core/toml_text.hpp"
#include "experiments/json_file.hpp"
#include "experiments/rank_agreement.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/snapshot.hpp"

namespace lbt::experiments {
namespace {

nlohmann::json outcome_json(const trainer::TrainOutcome& o) {
  return {{"status", o.status},
          {"steps", o.steps},
          {"examples", o.examples},
          {"last_global_batch", o.last_global_batch},
          {"steps_to_target", o.steps_to_target},
          {"examples_to_target", o.examples_to_target},
          {"steps_lo", o.steps_lo},
          {"refinement_evals", o.refinement_evals},
          {"other_hi", o.other_hi},
          {"best_val_accuracy", o.best_val_accuracy},
          {"best_val_loss", o.best_val_loss},
          {"final_val_accuracy", o.final_val_accuracy},
          {"final_val_loss", o.final_val_loss},
          {"best_val_mse", o.best_val_mse},
          {"best_val_r2", o.best_val_r2},
          {"final_val_mse", o.final_val_mse},
          {"final_val_r2", o.final_val_r2},
          {"final_val_loss_sd", o.final_val_loss_sd},
          {"final_val_mse_sd", o.final_val_mse_sd},
          {"best_val_loss_sd", o.best_val_loss_sd},
          {"best_val_mse_sd", o.best_val_mse_sd},
          {"final_val_r2_sd", o.final_val_r2_sd},
          {"best_val_r2_sd", o.best_val_r2_sd},
          {"last_loss", o.last_loss},
          {"last_finite_loss", o.last_finite_loss},
          {"diverged_step", o.diverged_step},
          {"divergence_reason", o.divergence_reason},
          {"wall_time_s", o.wall_time_s}};
}

// NaN (trainer::kNotMeasured) is written as null.
double number_or_unmeasured(const nlohmann::json& v) {
  return v.is_number() ? v.get<double>() : trainer::kNotMeasured;
}

void outcome_from_json(const nlohmann::json& j, trainer::TrainOutcome& o) {
  // A run's final checkpoint says how it ended (reached_target, diverged, ...): resuming from it
  // must not train on past a stop at the target. An interrupted run goes on.
  o.status = j.value("status", "running");
  if (o.status == "interrupted") o.status = "running";
  o.steps = j.at("steps");
  o.examples = j.value("examples", std::int64_t{-1});
  o.last_global_batch = j.value("last_global_batch", std::int64_t{-1});
  o.steps_to_target = j.at("steps_to_target");
  o.examples_to_target = j.at("examples_to_target");
  o.steps_lo = j.at("steps_lo");
  o.refinement_evals = j.at("refinement_evals");
  o.other_hi = j.value("other_hi", std::int64_t{-1});
  o.best_val_accuracy = number_or_unmeasured(j.at("best_val_accuracy"));
  o.best_val_loss = number_or_unmeasured(j.at("best_val_loss"));
  o.final_val_accuracy = number_or_unmeasured(j.at("final_val_accuracy"));
  o.final_val_loss = number_or_unmeasured(j.at("final_val_loss"));
  // regression metrics: absent from checkpoints written before they existed
  auto optional = [&](const char* key) {
    return j.contains(key) ? number_or_unmeasured(j[key]) : trainer::kNotMeasured;
  };
  o.best_val_mse = optional("best_val_mse");
  o.best_val_r2 = optional("best_val_r2");
  o.final_val_mse = optional("final_val_mse");
  o.final_val_r2 = optional("final_val_r2");
  o.final_val_loss_sd = optional("final_val_loss_sd");
  o.final_val_mse_sd = optional("final_val_mse_sd");
  o.best_val_loss_sd = optional("best_val_loss_sd");
  o.best_val_mse_sd = optional("best_val_mse_sd");
  o.final_val_r2_sd = optional("final_val_r2_sd");
  o.best_val_r2_sd = optional("best_val_r2_sd");
  o.last_loss = number_or_unmeasured(j.at("last_loss"));
  o.last_finite_loss = number_or_unmeasured(j.at("last_finite_loss"));
  // A diverged run's final checkpoint, resumed because its summary was not yet written (a kill
  // in between: the soak test's seed 27), wrote the summary without why (2026-11-30).
  o.diverged_step = j.value("diverged_step", std::int64_t{-1});
  o.divergence_reason = j.value("divergence_reason", std::string());
  o.wall_time_s = j.at("wall_time_s");
}

// A section of floats whose size the checkpoint says (the weights' EMA: empty without a
// target); absent: empty.
void read_floats(const trainer::LoadedCheckpoint& ck, const std::string& name,
                 std::vector<float>& out) {
  const auto it = ck.sections.find(name);
  out.resize(it == ck.sections.end() ? 0 : it->second.size() / sizeof(float));
  if (!out.empty()) ck.copy_to(name, std::span<float>(out));
}

// The below-target state of a checkpoint, sized like the live model's buffers.
std::shared_ptr<const trainer::BelowTargetState> read_below_target(
    const trainer::LoadedCheckpoint& ck, nn::Model& model, const optim::Optimizer& optimizer) {
  const auto& j = ck.header.at("below_target");
  auto below = std::make_shared<trainer::BelowTargetState>();
  below->step = j.at("step");
  below->divergence.first_loss = j.at("first_loss");
  below->divergence.skips_in_a_row = j.at("skips_in_a_row");
  below->divergence.skipped_steps = j.at("skipped_steps");
  below->model = trainer::take_snapshot(model, optimizer);  // the sizes; values replaced below
  below->model.streams = j.at("streams").get<std::vector<std::string>>();
  ck.copy_to("below/params", std::span<float>(below->model.params));
  below->ema_updated = j.value("ema_updated", std::int64_t{0});
  read_floats(ck, "below/ema", below->ema);
  for (std::size_t i = 0; i < below->model.optimizer_buffers.size(); ++i)
    ck.copy_to("below/optim/" + std::to_string(i),
               std::span<float>(below->model.optimizer_buffers[i]));
  for (std::size_t i = 0; i < below->model.layer_buffers.size(); ++i)
    ck.copy_to("below/layer_buffer/" + std::to_string(i),
               std::span<float>(below->model.layer_buffers[i]));
  return below;
}

}  // namespace

void save_run_checkpoint(const std::filesystem::path& run_dir, const trainer::LoopState& state,
                         nn::Model& model, const optim::Optimizer& optimizer,
                         const RunIdentity& identity, int keep,
                         const std::vector<std::vector<float>>* below_buffers) {
  nlohmann::json header = {{"step", state.step},
                           {"first_loss", state.divergence.first_loss},
                           {"skips_in_a_row", state.divergence.skips_in_a_row},
                           {"skipped_steps", state.divergence.skipped_steps},
                           {"last_val_accuracy", state.last_val_accuracy},
                           {"next_eval", state.next_eval},
                           {"near_target", state.near_target},
                           {"outcome", outcome_json(state.outcome)},
                           {"world_size", identity.world_size},
                           {"global_batch", identity.global_batch},
                           {"micro_batch", identity.micro_batch},
                           {"accum_steps", identity.accum_steps},
                           {"threads", identity.threads},
                           {"kernels", identity.kernels.text},
                           {"kernels_environment", identity.kernels.environment},
                           {"config", identity.resolved_config},
                           {"data", identity.data},
                           {"streams", model.stream_states()},
                           {"examples_seen", state.examples_seen},
                           {"batch_accum", state.batch_accum},
                           {"ema_updated", state.ema_updated}};
  std::vector<trainer::CheckpointSection> sections = {
      {"params", std::as_bytes(model.store().params())}};
  for (const auto& [name, buffer] : optimizer.state().buffers()) {
    sections.push_back({"optim/" + name, std::as_bytes(buffer.span())});
  }
  const auto buffers = model.buffers();
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    sections.push_back({"layer_buffer/" + std::to_string(i), std::as_bytes(buffers[i])});
  }
  sections.push_back({"noise", std::as_bytes(std::span<const double>(state.noise_state))});
  sections.push_back({"ema", std::as_bytes(std::span<const float>(state.ema))});
  // While the target is unmet: the state at the last evaluation below it (loop.hpp), so a
  // resumed run refines the crossing from the same step as an uninterrupted one.
  if (const auto& below = state.below_target) {
    header["below_target"] = {{"step", below->step},
                              {"first_loss", below->divergence.first_loss},
                              {"skips_in_a_row", below->divergence.skips_in_a_row},
                              {"skipped_steps", below->divergence.skipped_steps},
                              {"streams", below->model.streams},
                              {"ema_updated", below->ema_updated}};
    const auto bytes = [](const std::vector<float>& v) {
      return std::as_bytes(std::span<const float>(v));
    };
    sections.push_back({"below/params", bytes(below->model.params)});
    sections.push_back({"below/ema", bytes(below->ema)});
    const auto& buffers = below_buffers ? *below_buffers : below->model.optimizer_buffers;
    for (std::size_t i = 0; i < buffers.size(); ++i)
      sections.push_back({"below/optim/" + std::to_string(i), bytes(buffers[i])});
    for (std::size_t i = 0; i < below->model.layer_buffers.size(); ++i)
      sections.push_back(
          {"below/layer_buffer/" + std::to_string(i), bytes(below->model.layer_buffers[i])});
  }
  const auto dir = run_dir / "checkpoints";
  trainer::write_checkpoint(trainer::checkpoint_path(dir, state.step), header, sections);
  trainer::prune_checkpoints(dir, keep, state.step);
}

namespace {

[[noreturn]] void refuse_header(const trainer::LoadedCheckpoint& ck, const std::string& why) {
  throw DataError(ck.path.string() + ": its header does not hold what lbt writes (" + why + ")",
                  "it was edited or written by another program: move it out of checkpoints/ "
                  "(a resume then takes the one before it)");
}

// A count in the header, a whole number >= 0: a step of -5 or 1e300 (its CRC intact) indexed
// the data before its start, a segfault (2026-11-30 audit).
std::int64_t header_count(const trainer::LoadedCheckpoint& ck, const char* key,
                          std::int64_t fallback) {
  if (!ck.header.contains(key)) return fallback;
  const nlohmann::json& v = ck.header.at(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
    refuse_header(ck, std::string(key) + " = " + v.dump() + ", not a count");
  return v.get<std::int64_t>();
}

}  // namespace

void read_checkpoint_header(const trainer::LoadedCheckpoint& ck,
                            const std::function<void()>& read) {
  try {
    read();
  } catch (const nlohmann::json::exception& e) {
    refuse_header(ck, json_error_text(e));
  }
}

void refuse_changed_data(const std::string& refused, const trainer::LoadedCheckpoint& ck,
                         const std::vector<std::string>& now) {
  if (!ck.header.contains("data")) return;
  const auto then = ck.header.at("data").get<std::vector<std::string>>();
  for (std::size_t i = 0; i < std::max(then.size(), now.size()); ++i) {
    const DataPrint a = read_data_print(i < then.size() ? then[i] : ""),
                    b = read_data_print(i < now.size() ? now[i] : "");
    if (a.same_contents(b)) continue;
    throw DataError(refused + ": " + (b.key.empty() ? a.key : b.key) + "'s file " +
                        (b.path.empty() ? a.path : b.path) + " changed since the checkpoint (" +
                        data_change(a, b) + ")",
                    "use the data the run started with, or start a fresh run on the new data");
  }
}

namespace {

void restore_from(const std::filesystem::path& run_dir, const trainer::LoadedCheckpoint& ck,
                  trainer::LoopState& state, nn::Model& model, optim::Optimizer& optimizer,
                  const RunIdentity& identity) {
  const auto& h = ck.header;
  const std::string where = ck.path.string();
  if (h.at("world_size").get<int>() != identity.world_size) {
    throw ConfigError(where + " was written by " + std::to_string(h.at("world_size").get<int>()) +
                          " ranks; this job has " + std::to_string(identity.world_size),
                      "resume with the same number of processes (mpirun -np " +
                          std::to_string(h.at("world_size").get<int>()) + ")");
  }
  // Every changed key at once, before the checks of what they resolve to: resumed with another
  // config file, the threads' refusal came first, and its fix led to this one (2026-11-29).
  refuse_changed_config(run_dir, h.at("config").get<std::string>(), identity.resolved_config);
  for (const char* key : {"global_batch", "micro_batch", "accum_steps"}) {
    if (h.at(key).get<std::int64_t>() != (std::string(key) == "global_batch" ? identity.global_batch
                                          : std::string(key) == "micro_batch"
                                              ? identity.micro_batch
                                              : identity.accum_steps)) {
      throw ConfigError(where + ": train." + key + " differs from the checkpoint's " +
                            std::to_string(h.at(key).get<std::int64_t>()),
                        "resume with the run's own config (RUN_DIR/config.toml)");
    }
  }
  // train.threads = 0 means "cores / ranks": the same text can mean another count elsewhere.
  if (h.contains("threads") && h.at("threads").get<int>() != identity.threads) {
    throw ConfigError(
        where + " was written with " + std::to_string(h.at("threads").get<int>()) +
            " compute threads per rank; this run would use " + std::to_string(identity.threads) +
            " (train.threads), and a resume would not continue bit for bit",
        "resume with --set train.threads=" + std::to_string(h.at("threads").get<int>()));
  }
  // A checkpoint from before 2026-11-29 names no kernels (a resume on other ones was taken
  // silently, and its numbers left the uninterrupted run's by 7e-7 at once).
  if (h.contains("kernels") &&
      !same_kernels(h.at("kernels").get<std::string>(), identity.kernels.text)) {
    throw ConfigError(where + " was written with " + h.at("kernels").get<std::string>() +
                          "; this run would use " + identity.kernels.text +
                          ", which sum in another order: a resume would not continue bit for bit",
                      "resume where lbt runs those kernels (" +
                          h.value("kernels_environment", std::string()) +
                          " lbt train --resume ...), or train it again (--overwrite)");
  }
  refuse_changed_data("cannot resume " + run_dir.string(), ck, identity.data);
  ck.copy_to("params", model.store().params());
  for (auto& [name, buffer] : optimizer.state().buffers())
    ck.copy_to("optim/" + name, buffer.span());
  const auto buffers = model.buffers();
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    ck.copy_to("layer_buffer/" + std::to_string(i), buffers[i]);
  }
  model.set_stream_states(h.at("streams").get<std::vector<std::string>>());
  const auto noise = ck.sections.find("noise");
  state.noise_state.resize(noise == ck.sections.end() ? 0 : noise->second.size() / sizeof(double));
  ck.copy_to("noise", std::span<double>(state.noise_state));
  if (h.contains("below_target")) state.below_target = read_below_target(ck, model, optimizer);
  state.step = header_count(ck, "step", -1);
  if (state.step < 0) refuse_header(ck, "no step");
  // Adaptive batch (loop.hpp): the data position and the next step's accumulation; a fixed
  // run (and a checkpoint from before adaptive batches) has seen step x global_batch examples.
  state.examples_seen = header_count(ck, "examples_seen", state.step * identity.global_batch);
  state.batch_accum = header_count(ck, "batch_accum", 0);
  state.ema_updated = header_count(ck, "ema_updated", 0);
  read_floats(ck, "ema", state.ema);
  state.divergence.first_loss = h.at("first_loss");
  state.divergence.skips_in_a_row = h.at("skips_in_a_row");
  state.divergence.skipped_steps = h.at("skipped_steps");
  state.last_val_accuracy = h.at("last_val_accuracy");
  state.next_eval = header_count(ck, "next_eval", 0);  // older checkpoints: from the step
  state.near_target = h.value("near_target", false);
  outcome_from_json(h.at("outcome"), state.outcome);
}

}  // namespace

bool restore_run_checkpoint(const std::filesystem::path& run_dir, trainer::LoopState& state,
                            nn::Model& model, optim::Optimizer& optimizer,
                            const RunIdentity& identity) {
  trainer::LoadedCheckpoint ck;
  if (!trainer::load_latest_checkpoint(run_dir / "checkpoints", ck)) return false;
  read_checkpoint_header(ck, [&] { restore_from(run_dir, ck, state, model, optimizer, identity); });
  return true;
}

void refuse_resume_near_miss(const std::filesystem::path& dir) {
  const std::string what = "--resume " + dir.string() + ": not a run's directory";
  if (!trainer::list_checkpoints(dir).empty()) {
    throw ConfigError(what + " (it holds a run's checkpoints)",
                      "give the run's directory: --resume " + dir.parent_path().string());
  }
  if (std::filesystem::exists(dir / "sweep.json")) {
    throw ConfigError(what + " (a sweep's)",
                      "rerun its lbt sweep command: it continues the sweep's trials");
  }
}

void nothing_to_resume(const std::filesystem::path& run_dir) {
  throw ConfigError(
      "nothing to resume: " + (run_dir / "checkpoints").string() + " holds no intact checkpoint",
      "look at them (a resume skips each damaged one with a warning), or start the run over "
      "with --overwrite");
}

}  // namespace lbt::experiments
