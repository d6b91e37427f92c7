// A planned batch warmup (train.batch_schedule = "steps"): a piecewise-constant global batch over
// the examples seen, e.g. "0:256, 51200:512, 204800:1024". Merrill et al. 2025 ("Critical Batch
// Size Revisited", arXiv:2505.23971, Sec. 5) grow the batch as the critical batch measured along
// a run grows; `lbt plan --from CBS_DIR` writes such a schedule from `lbt cbs`'s measurement.
// Counted in examples, not steps: the LR schedule and the budget of a run whose batch changes are
// counted in examples too (adaptive_batch.hpp), and a critical batch is a statement about the
// data seen. A stage starts at the first step boundary at or after its position (steps are whole).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lbt::trainer {

struct BatchStep {
  std::int64_t from_examples;  // the stage starts once this many examples are seen
  std::int64_t batch;          // the global batch from there on
};

// Parses "FROM:BATCH, FROM:BATCH, ...": whole numbers, the first FROM 0, FROMs increasing,
// batches > 0. Throws ConfigError naming `key` and the offending entry.
std::vector<BatchStep> parse_batch_steps(std::string_view text, std::string_view key);

// The stages as the config writes them ("0:256, 51200:512").
std::string format_batch_steps(std::span<const BatchStep> steps);

// The batch of the step taken after `examples_seen` examples: the last stage starting there or
// before.
std::int64_t batch_at(std::span<const BatchStep> steps, std::int64_t examples_seen);

// The examples seen after `steps` steps from the start (the sum of the batches the schedule
// gives): where a replay or a resume at that step stands.
std::int64_t examples_after(std::span<const BatchStep> steps, std::int64_t step_count);

}  // namespace lbt::trainer
