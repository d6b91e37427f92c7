// A trial's process group, recorded in its directory (process.json: the group id, its leader's
// start time, the host and the boot), so that a later `lbt sweep` on the directory can tell
// whether processes of a trial started by an earlier sweep still run: a sweep killed with
// kill -9, or a program whose children outlived it. A rerun must not start a trial while they
// do: they would write into the directory it clears, mixing their lines into its files.
#pragma once
#include <sys/types.h>

#include <filesystem>
#include <optional>
#include <string>

#include "core/error.hpp"

namespace lbt::experiments {

// Writes trial_dir/process.json for the group `pgid` (its leader's pid, just forked).
void record_trial_group(const std::filesystem::path& trial_dir, pid_t pgid);

// Removes the record once the group has been killed and its leader reaped.
void forget_trial_group(const std::filesystem::path& trial_dir);

// The recorded group's id while it still has a process on this host; nullopt when there is no
// record, it was made on another host or before a reboot, or its group id now belongs to
// another group (its leader's pid reused: a start time that differs).
std::optional<pid_t> live_trial_group(const std::filesystem::path& trial_dir);

// Throws ConfigError (exit 2) naming the first trial under `trials_dir` whose recorded group
// still runs, with the command that stops it, or whose run.lock another process holds (a run of
// it started by hand); removes the records of groups that have ended.
// `only`: that trial's directory alone (a SLURM array task; the others may be running now).
void refuse_live_trial_groups(const std::filesystem::path& trials_dir,
                              const std::string& only = "");

// As a trial is about to start: the error naming the process that holds its directory's
// run.lock (a run of it started by hand while the sweep ran), or nullopt. The sweep then starts
// no trial, lets the running ones end and exits 2 with it, its trials' files untouched.
std::optional<ConfigError> trial_directory_in_use(const std::filesystem::path& trial_dir);

}  // namespace lbt::experiments
