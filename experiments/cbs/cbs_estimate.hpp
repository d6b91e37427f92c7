// The local critical batch at one checkpoint from its branches' losses (Merrill et al. 2025,
// arXiv:2505.23971, Sec. 3: the largest k whose loss after a fixed amount of data stays within
// a tolerance of the reference branch's, CBS = k_max x B). Pure: no files.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace lbt::experiments {

// The default tolerance is this many standard deviations of the reference branch's (k = 1)
// loss over the data-order seeds: a larger batch is "as good" when its loss is no further above
// the reference's mean than two continuations that differ only in their data order typically
// are from each other (their difference has sqrt(2) x that std).
inline constexpr double kToleranceStds = 2.0;

struct BranchLoss {
  std::int64_t multiplier = 1;
  int seed_index = 0;
  double loss = 0.0;  // NaN: none; outside any tolerance where it diverged
  // False where the branch measured nothing (it failed, or has not run): unlike a divergence,
  // no reading of its seed; a rerun of lbt cbs runs it again.
  bool measured = true;
};

struct CbsEstimate {
  double tolerance = 0.0;           // NaN: not measurable (fewer than 2 finite k = 1 losses)
  bool tolerance_measured = false;  // false: given by --tolerance
  double reference_loss = 0.0;      // mean k = 1 loss over seeds (NaN: none)
  double reference_std = 0.0;       // its sample std over seeds (NaN: fewer than 2)
  std::vector<std::int64_t> k_max_per_seed;  // seed order; 1: even k = 2 was outside; 0: no
                                             // reading (a branch it needed measured nothing)
  // The lower median of k_max_per_seed, and their range; 0 for none (no reference loss or
  // tolerance).
  std::int64_t k_max = 0, k_lo = 0, k_hi = 0;
  // The interval's upper end in multiples of B: a seed's reading k says k B <= CBS < k' B (k' the
  // next multiplier tried: the grid's resolution), so the CBS the seeds allow runs from k_lo B
  // to k_upper B; 0 where k_hi is the largest multiplier (that seed: CBS at least k_hi B, open).
  std::int64_t k_upper = 0;
  // "below": k_max = 1, the CBS is below the smallest k > 1 times B; "at_least": k_max is the
  // largest multiplier tried; "": resolved on the grid; "unmeasured": no estimate.
  std::string bound;
};

// `multipliers`: sorted, holding 1; `tolerance` < 0: measured (kToleranceStds x reference_std).
CbsEstimate estimate_cbs(const std::vector<BranchLoss>& losses,
                         const std::vector<std::int64_t>& multipliers, int seeds, double tolerance);

// k_max of one seed: the largest k such that every multiplier in (1, k] has a finite loss within
// `tolerance` of `reference_loss` (1 when k = 2 already fails); 0 where a branch of the seed
// measured nothing before one fell outside (a failed k = 4 after k = 2 inside tells nothing).
std::int64_t k_max_of_seed(const std::vector<BranchLoss>& losses,
                           const std::vector<std::int64_t>& multipliers, int seed,
                           double reference_loss, double tolerance);

}  // namespace lbt::experiments
