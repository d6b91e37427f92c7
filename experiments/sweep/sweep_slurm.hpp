// `lbt sweep --launcher slurm`: the sbatch script for one SLURM array over the trials decided
// so far and not yet finished, named (not indexed: the adaptive search grows the plan). After
// the array ends, the same command writes the next round, until every trial has ended.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/sweep/sweep.hpp"
#include "experiments/sweep/sweep_plan.hpp"

namespace lbt::experiments {

struct SlurmArray {
  std::filesystem::path dir, lbt;  // the sweep directory, the lbt executable
  const SweepOptions& options;
  const SweepSettings& settings;
  std::vector<std::string> pending;  // names of the trials to run
  std::size_t planned = 0;           // trials in the plan so far
};

// Writes DIR/sweep.sbatch (and runs sbatch with options.submit); with no trial pending, prints
// the --collect command instead. Throws lbt::Error when sbatch fails.
void write_slurm_array(const SlurmArray& array);

// `s` as one word for /bin/sh.
std::string shell_quote(const std::string& s);

// `s` as one argument of an #SBATCH line: sbatch reads quotes and backslash escapes there (its
// own parser, not a shell's), so spaces in a path do not split it.
std::string sbatch_quote(const std::string& s);

// What the script's lines cannot carry: a newline or other control character in the sweep
// directory, the config's path, a --set, the --exec command, sweep.slurm_time or an entry of
// sweep.slurm_options would end a comment or an #SBATCH line and start a line of shell code.
// ConfigError naming which; called before anything is written.
void check_slurm_script_inputs(const SweepOptions& options, const SweepSettings& settings,
                               const std::filesystem::path& dir);

}  // namespace lbt::experiments
