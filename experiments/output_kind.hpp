// Which lbt command wrote a directory, told by the files each one keeps there, so that one
// command's --out never mixes its files into another's results (a sweep written into a run
// directory, a run into a sweep's): the readers would then take it for either.
#pragma once
#include <filesystem>
#include <string_view>

namespace lbt::experiments {

enum class OutputKind {
  kNone,     // a new, empty or unrelated directory
  kRun,      // lbt train or lbt noise: config.toml, summary.json, checkpoints/
  kInner,    // a folder inside one of these: checkpoints/, trials/, branches/
  kSweep,    // lbt sweep: sweep.json, base_config.toml, sweep.lock
  kCbs,      // lbt cbs: cbs_settings.json, cbs.json, cbs.lock
  kScaling,  // lbt scaling: scaling.csv, scaling_runs.csv, scaling.lock
};

OutputKind output_kind(const std::filesystem::path& dir);

// Refuses (ConfigError, before anything is written) a `dir` that holds another command's
// output than `mine`'s, or that is the filesystem root; a directory of unrelated files (a
// README, notes) is accepted.
void refuse_other_output(const std::filesystem::path& dir, OutputKind mine,
                         std::string_view command);

// Refuses to replace (--overwrite) a run that is one of a sweep's trials or an lbt cbs's
// branches: the sweep reads it back by name, and lbt fit then reported another run's B_noise as
// the sweep's (2026-11-29 audit). lbt sweep and lbt cbs rerun their own without --overwrite.
void refuse_replacing_a_member_run(const std::filesystem::path& dir);

}  // namespace lbt::experiments
