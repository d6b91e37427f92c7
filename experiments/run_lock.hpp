// One writer per run directory: DIR/run.lock, held by the lbt train (or lbt noise) that writes
// DIR for its whole life. A second `lbt train --resume DIR` while DIR's run still trains, or two
// runs started on one --out, would otherwise both write it: the resume rewrites metrics.jsonl
// under the first run (whose later lines then go to the unlinked file) and the two runs'
// checkpoints interleave.
#pragma once
#include <filesystem>
#include <memory>

#include "experiments/dir_lock.hpp"
#include "trainer/run_dir.hpp"

namespace lbt::experiments {

// DIR/run.lock, taken without waiting; a ConfigError (exit 2) naming the live owner otherwise.
// `command` is the owner's name it records ("lbt noise" trains too: its lock read "lbt train").
DirLock lock_run_directory(const std::filesystem::path& dir, const char* command = "lbt train");

// Refuses (ConfigError, exit 2) a resume of `dir` whose checkpoints/ is a symbolic link: a run
// writes and prunes its checkpoints there and reads the newest back, so a directory elsewhere
// that two runs' links share would have one run delete the other's checkpoints and resume from
// them. (lbt never writes through a link onto a file either: core/io.hpp, open_own_file.)
void refuse_linked_checkpoints(const std::filesystem::path& dir);

// A new run's directory (trainer::RunDirectory's constructor: a run already there is refused
// unless `overwrite`, then replaced whole), with `lock` held on it before any file of the run
// is written or removed; `lock` may already hold the directory (a --resume auto that found no
// checkpoint). Another command's output in `dir` is refused first.
std::unique_ptr<trainer::RunDirectory> open_new_run_directory(const std::filesystem::path& dir,
                                                              bool overwrite, DirLock& lock,
                                                              const char* command = "lbt train");

}  // namespace lbt::experiments
