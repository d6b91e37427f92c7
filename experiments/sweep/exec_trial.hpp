// `lbt sweep --exec "CMD"`: a trial is any program. lbt plans the trials (batch sizes, the LR
// search, seeds), runs CMD with the trial's values in its placeholders (exec_command.hpp: as
// argument words, never pasted into shell code), and reads what the program appended to
// {run_dir}/eval.jsonl (one JSON object per line: "step" and metric names such as "val_loss" or
// "val_accuracy") into the same summary.json `lbt train` writes, so the search, the CSVs, the fit
// and the plots treat it as any trial. The protocol:
//   placeholders  {batch_size} {lr} (the peak LR at B) {seed} {run_dir} {max_steps}
//                 {eval_every} and every key the sweep sets for the trial, as {section.key}
//   eval.jsonl    {"step": S, "<metric>": V, ...} with S >= 0 strictly increasing line by line;
//                 steps_to_target = the first step whose metric meets train.target, steps_lo =
//                 the evaluated step before it; lines past {max_steps} are not read (a warning
//                 names the first); a target met at step 0 measures nothing: failed
//   noise.jsonl   optional: {"step", "g_small_sq", "g_big_sq", "b_small", "b_big"}: squared
//                 gradient norms at two batch sizes, from which lbt computes B_simple; a line
//                 that is not such an object is skipped (summary.json's noise_warning names it)
//   outcome       a non-finite metric (a bare NaN, Infinity or -Infinity as Python's json.dumps
//                 writes them, null or a string): diverged; exit status != 0: failed (the last
//                 lines of its output kept); malformed JSON, steps out of order, no eval.jsonl or
//                 a deleted run directory: failed, naming the file and line
#pragma once
#include <filesystem>
#include <istream>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "experiments/child_process.hpp"
#include "experiments/sweep/sweep_plan.hpp"
#include "experiments/sweep/trial_noise.hpp"
#include "trainer/config/train_config.hpp"

namespace lbt::experiments {

// Checks CMD before any trial: its placeholders, its quotes. Throws ConfigError.
void check_exec_template(const std::string& command, const Trial& trial, std::int64_t base_seed);

// After the program ended: writes run_dir/summary.json from its exit and eval.jsonl. Returns a
// warning for the sweep to print once (evaluations past the budget, noise.jsonl lines skipped),
// or "". `outcomes_only` (the sweep forwarded a signal): writes none unless the program reached
// the target or diverged, since it may have stopped early on its own (caught the signal).
std::string write_exec_summary(const Trial& trial, const std::filesystem::path& run_dir,
                               const trainer::Target& target, const ChildExit& exit,
                               const std::filesystem::path& log_file, bool outcomes_only);

// One line of a program's JSON output: bare NaN, Infinity and -Infinity (outside strings) read
// as the strings "NaN", "Infinity", "-Infinity", i.e. as non-finite values. Discarded (see
// nlohmann::json::is_discarded) when the line is not JSON.
nlohmann::json parse_program_line(const std::string& text);

// The next line of a program's file into `line` (false at the end), at most 1 MiB of it: a
// longer one (runaway output) reads as its start and " ... (a line over 1 MiB)", which parses
// as no JSON, so the trial fails naming the line without the whole line held (a 300 MiB line
// took 1.5 GB; 2026-11-30 audit).
bool next_program_line(std::istream& in, std::string& line);
inline constexpr std::string_view kLineOver1MiB = " ... (a line over 1 MiB)";  // its ending

// B_simple at the start, at the target and over the run from the program's raw noise.jsonl
// (McCandlish et al. 2018, App. A.1: the ratio of the means of the unbiased estimates).
// Records past `budget` steps (> 0: the trial's {max_steps}) are not read.
TrialNoise read_exec_noise(const std::filesystem::path& run_dir, std::int64_t steps_to_target,
                           std::int64_t budget = 0);

// "" or why lines of run_dir/noise.jsonl were skipped: how many, and the first by number.
std::string exec_noise_warning(const std::filesystem::path& run_dir);

}  // namespace lbt::experiments
