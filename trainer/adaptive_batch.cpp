// Adaptive batch size; see adaptive_batch.hpp (McCandlish et al. 2018, App. D).
#include "trainer/adaptive_batch.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "trainer/config/train_keys.hpp"

namespace lbt::trainer {

// McCandlish App. D: the batch that balances steps and examples tracks the noise scale: either
// B = B_simple (their B_crit ~ B_noise ~ B_simple, §2.2), or the minimiser of S + E / B0 under
// the per-step model, B = sqrt(B0 B_noise) (adaptive_batch.hpp).
double rule_batch(const AdaptiveBatchOptions& o, double b_simple) {
  return o.rule == BatchRule::Sqrt ? std::sqrt(o.sqrt_scale * b_simple) : b_simple;
}

std::int64_t adaptive_accum(const AdaptiveBatchOptions& o, double b_simple, bool resolved,
                            std::int64_t accum) {
  if (!resolved || !std::isfinite(b_simple) || b_simple <= 0.0) return accum;
  const double target = std::clamp(rule_batch(o, b_simple), static_cast<double>(o.batch_min),
                                   static_cast<double>(o.batch_max));
  const auto k = std::clamp<std::int64_t>(
      std::llround(target / static_cast<double>(o.step_examples)), o.accum_min(), o.accum_max());
  // The hysteresis is on the rule's own batch, half a realisable step past the midpoint to a
  // neighbour: compared after rounding, a B_simple near the midpoint between two realisable
  // batches a grid step apart (> the hysteresis) moved the batch back and forth at every report.
  const auto step = static_cast<double>(o.step_examples);
  const double now = static_cast<double>(accum) * step;
  return std::abs(target - now) > o.hysteresis * now + 0.5 * step ? k : accum;
}

std::int64_t stepped_accum(const AdaptiveBatchOptions& o, std::int64_t examples_seen) {
  return batch_at(o.steps, examples_seen) / o.step_examples;
}

namespace {

// batch_min / batch_max must be ranks x micro_batch x k for a whole k >= 1.
void require_realisable(Config& c, const char* name, std::int64_t batch, std::int64_t step,
                        int world_size, std::int64_t micro_batch) {
  if (batch % step == 0) return;
  c.fail(name,
         "a multiple of ranks x micro_batch = " + std::to_string(world_size) + " x " +
             std::to_string(micro_batch) + " = " + std::to_string(step) +
             " (the batches this layout can realise by accumulation)",
         std::to_string(batch),
         "e.g. " + std::to_string(std::max<std::int64_t>(1, batch / step) * step));
}

std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// train.batch_rule and, for sqrt, its scale B0 (examples, > 0).
void read_rule(Config& c, AdaptiveBatchOptions& a) {
  const std::string rule = c.get_string(train_key("train.batch_rule"));
  a.rule = rule == "sqrt" ? BatchRule::Sqrt : BatchRule::BSimple;
  a.sqrt_scale = c.get_double(train_key("train.batch_sqrt_scale"));
  if (a.rule == BatchRule::Sqrt && !(a.sqrt_scale > 0.0 && std::isfinite(a.sqrt_scale)))
    c.fail("train.batch_sqrt_scale", "> 0 examples with train.batch_rule = \"sqrt\"",
           shortest(a.sqrt_scale),
           "e.g. --set train.batch_sqrt_scale=512 (B = sqrt(512 x B_simple))");
}

// micro_batch 0: the smallest batch over the ranks; every batch a whole number of ranks x
// micro_batch. Sets step_examples.
void resolve_layout(Config& c, AdaptiveBatchOptions& a, const char* smallest_key, int world_size,
                    std::int64_t& micro_batch, std::int64_t accum_steps) {
  const std::string schedule = a.steps.empty() ? "adaptive" : "steps";
  if (accum_steps != 0)
    c.fail("train.accum_steps",
           "0 with train.batch_schedule = \"" + schedule + "\" (the batch moves it)",
           std::to_string(accum_steps), "set train.micro_batch instead");
  if (micro_batch == 0) {
    if (a.batch_min % world_size != 0)
      c.fail(smallest_key, "divisible by the number of ranks (" + std::to_string(world_size) + ")",
             std::to_string(a.batch_min), "or set train.micro_batch");
    micro_batch = a.batch_min / world_size;
  }
  a.step_examples = world_size * micro_batch;
}

// train.batch_schedule = "steps": the stages of train.batch_steps (batch_steps.hpp).
void read_steps(Config& c, AdaptiveBatchOptions& a, int world_size, std::int64_t& global_batch,
                std::int64_t& micro_batch, std::int64_t& accum_steps) {
  a.steps = parse_batch_steps(c.get_string(train_key("train.batch_steps")), "train.batch_steps");
  a.batch_min = a.batch_max = a.steps.front().batch;
  for (const BatchStep& s : a.steps) {
    a.batch_min = std::min(a.batch_min, s.batch);
    a.batch_max = std::max(a.batch_max, s.batch);
  }
  resolve_layout(c, a, "train.batch_steps", world_size, micro_batch, accum_steps);
  for (const BatchStep& s : a.steps)
    require_realisable(c, "train.batch_steps", s.batch, a.step_examples, world_size, micro_batch);
  global_batch = a.steps.front().batch;
  accum_steps = global_batch / a.step_examples;
}

}  // namespace

AdaptiveBatchOptions read_adaptive_batch(Config& c, int world_size, std::int64_t& global_batch,
                                         std::int64_t& micro_batch, std::int64_t& accum_steps) {
  AdaptiveBatchOptions a;
  const std::string schedule = c.get_string(train_key("train.batch_schedule"));
  a.enabled = schedule != "fixed";
  if (schedule == "steps") {
    read_steps(c, a, world_size, global_batch, micro_batch, accum_steps);
    return a;
  }
  if (!a.enabled) return a;
  a.batch_min = c.get_int(train_key("train.batch_min"));
  a.batch_max = c.get_int(train_key("train.batch_max"));
  a.hysteresis = c.get_double(train_key("train.batch_hysteresis"));
  read_rule(c, a);
  if (a.batch_min <= 0)
    c.fail("train.batch_min", "> 0 with train.batch_schedule = \"adaptive\"",
           std::to_string(a.batch_min), "e.g. --set train.batch_min=64");
  if (a.batch_max < a.batch_min)
    c.fail("train.batch_max", ">= train.batch_min = " + std::to_string(a.batch_min),
           std::to_string(a.batch_max));
  if (!(a.hysteresis >= 0.0 && a.hysteresis < 1.0))
    c.fail("train.batch_hysteresis", "in [0, 1)", std::to_string(a.hysteresis), "e.g. 0.1");
  resolve_layout(c, a, "train.batch_min", world_size, micro_batch, accum_steps);
  require_realisable(c, "train.batch_min", a.batch_min, a.step_examples, world_size, micro_batch);
  require_realisable(c, "train.batch_max", a.batch_max, a.step_examples, world_size, micro_batch);
  global_batch = a.batch_min;
  accum_steps = a.accum_min();
  return a;
}

}  // namespace lbt::trainer
