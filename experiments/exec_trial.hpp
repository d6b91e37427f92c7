// `lbt sweep --exec "CMD"`: a trial is any program. lbt plans the trials (batch sizes, the LR
// search, seeds), runs CMD with the trial's values in its placeholders, and reads what the
// program appended to {run_dir}/eval.jsonl (one JSON object per line: "step" and metric names
// such as "val_loss" or "val_accuracy") into the same summary.json `lbt train` writes, so the
// search, the CSVs, the fit and the plots treat it as any trial. The protocol:
//   placeholders  {batch_size} {lr} (the peak LR at B) {seed} {run_dir} {max_steps}
//                 {eval_every} and every key the sweep sets for the trial, as {section.key}
//   eval.jsonl    {"step": S, "<metric>": V, ...}; steps_to_target = the first step whose
//                 metric meets train.target, steps_lo = the evaluated step before it
//   noise.jsonl   optional: {"step", "g_small_sq", "g_big_sq", "b_small", "b_big"}: squared
//                 gradient norms at two batch sizes, from which lbt computes B_simple
//   outcome       a non-finite metric: diverged; exit status != 0: failed (the last lines of
//                 its output kept); malformed JSON or no eval.jsonl: failed, naming the line
#pragma once
#include <filesystem>
#include <string>

#include "experiments/child_process.hpp"
#include "experiments/sweep_plan.hpp"
#include "experiments/trial_noise.hpp"
#include "trainer/train_config.hpp"

namespace lbt::experiments {

// CMD with the trial's placeholders filled. Throws ConfigError naming an unknown placeholder.
std::string expand_placeholders(const std::string& command, const Trial& trial,
                                std::int64_t base_seed, const std::filesystem::path& run_dir);

// After the program ended: writes run_dir/summary.json from its exit and eval.jsonl.
void write_exec_summary(const Trial& trial, const std::filesystem::path& run_dir,
                        const trainer::Target& target, const ChildExit& exit,
                        const std::filesystem::path& log_file);

// B_simple at the start, at the target and over the run from the program's raw noise.jsonl
// (McCandlish et al. 2018, App. A.1: the ratio of the means of the unbiased estimates).
TrialNoise read_exec_noise(const std::filesystem::path& run_dir, std::int64_t steps_to_target);

}  // namespace lbt::experiments
