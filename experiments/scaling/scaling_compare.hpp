// `lbt scaling --compare KEY=V1,V2,...`: one scaling study over several values of one config
// key (variants, e.g. train.overlap_comm=false,true). Every repeat runs every (variant, worker
// count) pair, interleaved, so a shared machine's drift hits all variants alike, and variants
// are compared by ratios taken within each repeat (throughput over the first variant's, the
// baseline, at the same K), reported as median [min-max] over repeats: separate studies on a
// machine whose speed drifts by several percent between minutes cannot resolve a few-percent
// difference, one interleaved study can bound it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "experiments/scaling/scaling.hpp"

namespace lbt::experiments {

struct ScalingVariant {
  std::string tag;  // "overlap_comm=true": directory under the study's OUT and `variant` column
  std::string set;  // "train.overlap_comm=true": the --set every run of the variant adds
};

// The --set overrides the study adds after the user's and the variant's (a throughput window
// of `steps` steps, one thread per rank); a variant may not compare one of these keys.
std::vector<std::string> study_sets(std::int64_t steps);

// Parses KEY=V1,V2[,...] (a comma inside [...] or quotes belongs to its value). Throws
// ConfigError for a spec without '=', an empty key or value, fewer than two values, two equal
// values (or two whose tags are equal), or a key in study_sets. Whether the key exists and
// each value fits it is checked by loading each variant's config (run_scaling).
std::vector<ScalingVariant> parse_compare(const std::string& spec);

// One place in a repeat's run order: variant index (0 = baseline) and worker count.
struct StudyRun {
  int variant = 0, workers = 0;
};
// The runs of 1-based repeat r: every (variant, K) pair, K-major (a K's variants run back to
// back, so their ratio spans a few runs, not a whole repeat), rotated left by r - 1 as
// repeat_order rotates the worker list. With one variant this is repeat_order.
std::vector<StudyRun> repeat_runs(int variants, const std::vector<int>& workers, int repeat);

// A line of the note printed before a study whose key changes only what ranks exchange
// (train.overlap_comm, train.bucket_mb, train.sync_every, train.post_local_after) and whose
// smallest worker count is 1, where there is nothing to exchange: its variants run the same
// work there. Empty otherwise.
std::string single_rank_note(const std::string& key, int smallest_workers);

// One variant against the baseline at one worker count, over repeats (scaling_compare.csv).
struct VariantRatio {
  int workers = 0, repeats = 0;
  std::string variant, baseline;
  Spread ratio;       // samples/s over the baseline's, same K and repeat
  Spread efficiency;  // efficiency minus the baseline's, same K and repeat
};

// Per worker count (ascending), per variant after the first of `variants` (the baseline), in
// that order: the per-repeat ratios' median [min-max]. Sets efficiencies itself
// (set_speedups_per_repeat). Pure; throws lbt::Error when a run has no baseline run at its K
// and repeat.
std::vector<VariantRatio> compare_variants(std::vector<ScalingRow> runs,
                                           const std::vector<std::string>& variants);

// scaling_compare.csv: workers, variant, baseline, repeats, samples_per_s_ratio with min and
// max, efficiency_diff with min and max.
std::string compare_csv(const std::vector<VariantRatio>& ratios);

// The study's result at a glance: per worker count, each variant's samples/s and efficiency,
// median [min-max], and its ratio and efficiency difference against the baseline.
void print_compare_table(const std::vector<ScalingSummary>& rows,
                         const std::vector<VariantRatio>& ratios);

}  // namespace lbt::experiments
