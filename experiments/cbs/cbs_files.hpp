// lbt cbs's files: B_simple read from the reference run's noise.jsonl at each branch step, and
// cbs.json, cbs.csv and branches.csv written from the estimates; cbs.png drawn by
// notebooks/lbt_cbs_plot.py.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "experiments/cbs/branch_length.hpp"
#include "experiments/cbs/cbs_branches.hpp"
#include "experiments/cbs/cbs_estimate.hpp"

namespace lbt::experiments {

// McCandlish et al. 2018's B_simple from the reference's noise log at the logged step nearest a
// step: the window's "now" value and its ci95, of the two-batch estimator or, where only it has
// resolved the value there, the per-example one. Unresolved there: b_simple NaN (null in
// cbs.json) with the bounds the record has (a lower bound: B_simple is large). No log: step -1.
struct BSimpleAtStep {
  double b_simple = 0.0, ci_lo = 0.0, ci_hi = 0.0;
  std::int64_t step = -1;  // the record's step (-1: none)
  std::string estimator;
};
BSimpleAtStep read_noise_at_step(const std::filesystem::path& run_dir, std::int64_t step);

// One checkpoint's measurement.
struct CbsPoint {
  std::int64_t step = 0, batch = 0, examples = 0;  // examples: per branch
  BranchLength length;                             // how `examples` was chosen
  // The reference's val_loss at the checkpoint (NaN: it did not evaluate there), and how many
  // tolerances the reference branch fell below it: the measurement compares more than noise
  // only where this is well above 1.
  double loss_at_checkpoint = 0.0;
  double fall_in_tolerances() const {
    return (loss_at_checkpoint - estimate.reference_loss) / estimate.tolerance;
  }
  CbsEstimate estimate;
  BSimpleAtStep noise;
  std::vector<BranchResult> branches;
};

struct CbsSettings {  // what cbs.json repeats from the run's options
  std::filesystem::path reference;
  std::vector<std::int64_t> multipliers;  // sorted, with 1
  int seeds = 0;
  std::string scaling;
  double tolerance_given = -1.0;  // < 0: measured
};

void write_cbs_json(const std::filesystem::path& path, const CbsSettings& settings,
                    const std::vector<CbsPoint>& points);
void write_cbs_csv(const std::filesystem::path& path, const CbsSettings& settings,
                   const std::vector<CbsPoint>& points);
void write_branches_csv(const std::filesystem::path& path, const std::vector<CbsPoint>& points);

// Runs /usr/bin/python3 notebooks/lbt_cbs_plot.py OUT (LBT_NOTEBOOKS_DIR overrides the folder);
// returns a warning, or "" when cbs.png was written.
std::string make_cbs_plot(const std::filesystem::path& out);

}  // namespace lbt::experiments
