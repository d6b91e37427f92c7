// `lbt cbs`: the local critical batch along a finished run, measured by branching from its
// checkpoints (Merrill et al. 2025, arXiv:2505.23971), beside the noise scale B_simple that the
// same run logged (McCandlish et al. 2018). docs/cbs.md is the user's page.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/cbs/cbs_files.hpp"
#include "experiments/cbs/cbs_plan.hpp"

namespace lbt::experiments {

struct CbsOutcome {
  std::filesystem::path out;
  std::vector<CbsPoint> points;
  int ran = 0, branches = 0;
  std::vector<std::string> warnings;
};

// Plans (refusing bad input before any branch runs), runs the unfinished branches, and writes
// OUT/cbs.json, cbs.csv, branches.csv and cbs.png. Throws Interrupted after SIGINT/SIGTERM
// (the branches saved themselves; a rerun continues them).
CbsOutcome run_cbs(const CbsOptions& options);

}  // namespace lbt::experiments
