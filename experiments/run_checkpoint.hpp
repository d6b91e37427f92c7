// Checkpoints of a training run: what a run saves (parameters, optimizer state, loop state,
// layout and resolved config) and the checks made before resuming from one.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/kernel_identity.hpp"
#include "nn/model.hpp"
#include "optim/optimizer.hpp"
#include "trainer/checkpoint.hpp"
#include "trainer/loop.hpp"

namespace lbt::experiments {

struct RunIdentity {
  int world_size = 1;
  std::int64_t global_batch = 0, micro_batch = 0, accum_steps = 0;
  int threads = 1;              // compute threads per rank in effect (train.threads or its default)
  std::string resolved_config;  // config.toml text
  // The data files: "KEY SIZE FINGERPRINT PATH" (rank_agreement.hpp's fingerprint, then the path
  // it was read from, shown, not compared: the data may move).
  std::vector<std::string> data;
  // The CPU kernels (path, GEMM, convolutions): another set sums in another order.
  KernelIdentity kernels = kernel_identity();
};

// Writes run_dir/checkpoints/step_N.ckpt and keeps the newest `keep`. `below_buffers`: the
// below-target state's optimizer buffers to write in place of its own (gathered whole from the
// ranks' shares); null: its own.
void save_run_checkpoint(const std::filesystem::path& run_dir, const trainer::LoopState& state,
                         nn::Model& model, const optim::Optimizer& optimizer,
                         const RunIdentity& identity, int keep,
                         const std::vector<std::vector<float>>* below_buffers = nullptr);

// Loads the newest intact checkpoint of run_dir into model/optimizer and returns its loop
// state. Refuses (ConfigError naming what differs) a different world size or batch layout,
// or a resolved config that differs in a key that changes the computation.
// Returns false when the run has no usable checkpoint.
bool restore_run_checkpoint(const std::filesystem::path& run_dir, trainer::LoopState& state,
                            nn::Model& model, optim::Optimizer& optimizer,
                            const RunIdentity& identity);

// Runs `read` over `ck`'s header: a field missing or of another type than lbt writes (a
// checkpoint edited and its checksum recomputed, or another program's) is a DataError naming the
// file, not nlohmann's bare message.
void read_checkpoint_header(const trainer::LoadedCheckpoint& ck, const std::function<void()>& read);

// The config names the data's paths, not their contents: a run resumed (or branched) after its
// files were regenerated, cut or replaced would train on two datasets. DataError "REFUSED: KEY's
// file PATH changed since the checkpoint (...)" where a file's size or fingerprint in `now`
// (RunIdentity::data) differs from `ck`'s record; a checkpoint without one is not checked.
void refuse_changed_data(const std::string& refused, const trainer::LoadedCheckpoint& ck,
                         const std::vector<std::string>& now);

// A ConfigError "cannot resume RUN_DIR: the config changed (key: before -> now, ...)" where a
// key of `resolved_toml` has another value in the checkpoint's `saved_toml`, except the keys that
// may change on resume; keys the saved config has and `resolved_toml` lacks are not compared.
void refuse_changed_config(const std::filesystem::path& run_dir, const std::string& saved_toml,
                           const std::string& resolved_toml);
// The differences that refusal names ("key: before -> now, ..."), "" where there are none.
std::string config_differences(const std::string& saved_toml, const std::string& resolved_toml);

// --resume given a run's checkpoints/ or a sweep's directory: an error naming the fix, before
// anything reads the directory (until 2026-11-29 both read "the run has no config.toml" or
// "nothing to resume ... use --resume auto", which refused a sweep's).
void refuse_resume_near_miss(const std::filesystem::path& dir);
// The error of a --resume RUN_DIR whose checkpoints/ holds no intact checkpoint (and of a
// --resume auto whose checkpoints/ holds some, none intact: starting fresh would replace them).
[[noreturn]] void nothing_to_resume(const std::filesystem::path& run_dir);

// "section.key" -> value text of a resolved config.toml (toml++'s printed form).
std::map<std::string, std::string> flatten_config(const std::string& resolved_toml);

// The keys that name data files: a file may live at another path (each host's copy, a resume
// after a move); its contents are compared by fingerprint instead (refuse_changed_data).
bool names_a_data_file(const std::string& key);

// Keys that may differ on resume: they do not change any computed value.
bool key_may_change_on_resume(const std::string& key);

}  // namespace lbt::experiments
