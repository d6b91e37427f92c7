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

}  // namespace lbt::experiments
