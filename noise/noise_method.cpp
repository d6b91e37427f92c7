// choose_method: which noise estimators a model and batch layout allow, and why; see
// online_estimator.hpp. McCandlish et al. 2018 (arXiv:1812.06162), App. A.1: the two-batch form
// needs a small batch b < B; per-example norms need examples that do not interact in the model.
#include <string>

#include "core/error.hpp"
#include "noise/online_estimator.hpp"

namespace lbt::noise {

NoiseMethod choose_method(const OnlineOptions& o, int world_size, std::int64_t micro_batch,
                          std::int64_t accum, const PerExampleSupport& support) {
  NoiseMethod m;
  if (!o.enabled) return m;
  m.B_big = static_cast<double>(world_size) * micro_batch * accum;
  const std::string big = "the global batch of " + std::to_string(world_size * micro_batch * accum);
  std::string small;  // the two-batch form's small batches, in words
  if (world_size >= 2) {
    m.b_small = static_cast<double>(micro_batch * accum);
    small = "each of the " + std::to_string(world_size) + " ranks' local gradients (" +
            std::to_string(micro_batch * accum) + " examples)";
  } else if (accum >= 2) {
    m.b_small = static_cast<double>(micro_batch);
    small = o.all_micro_batches
                ? std::to_string(accum) + " micro-batches" + " of " + std::to_string(micro_batch)
                : "micro-batch 0 of " + std::to_string(accum) + " (" + std::to_string(micro_batch) +
                      " examples; noise.small_batches = \"" + o.small_batches + "\")";
  }
  const bool has_small = !small.empty();
  if (o.per_example && !o.two_batch && !support.exact) {
    throw ConfigError("noise.estimator = \"per_example\": " + support.reason +
                          ", so per-example gradient norms are not exact for this model",
                      "use noise.estimator = \"two_batch\" with train.accum_steps >= 2 or >= 2 "
                      "ranks (lbt noise picks such a layout itself)");
  }
  if (o.two_batch && !o.per_example && !has_small) {
    throw ConfigError(
        "noise.estimator = \"two_batch\" needs two batch sizes, but one process "
        "with train.accum_steps = 1 has only the global batch",
        "set train.accum_steps >= 2 (the micro-batches become the small batches), "
        "run on >= 2 ranks, or use noise.estimator = \"per_example\"");
  }
  if (!has_small && !support.exact) {
    throw ConfigError("noise: no estimator can run: " + support.reason +
                          ", so per-example norms are not exact, and one process with "
                          "train.accum_steps = 1 gives the two-batch form no small batch",
                      "set train.accum_steps >= 2 (BatchNorm then normalises over each "
                      "micro-batch) or run on >= 2 ranks; lbt noise picks such a layout itself "
                      "when train.micro_batch and train.accum_steps are unset");
  }
  m.two_batch = o.two_batch && has_small;
  m.per_example = o.per_example && support.exact;
  // McCandlish App. A.1 needs b < B; every layout above gives it (B = world x micro x accum).
  if (m.two_batch && !(m.b_small < m.B_big)) {
    throw ConfigError("noise: the big batch (" + std::to_string(m.B_big) +
                          ") must be larger than the small one (" + std::to_string(m.b_small) + ")",
                      "set train.accum_steps >= 2 or run on >= 2 ranks");
  }
  m.name = m.two_batch && m.per_example ? "two_batch+per_example"
           : m.two_batch                ? "two_batch"
                                        : "per_example";
  std::string why;
  if (m.two_batch) why += "two_batch: small batches = " + small + ", big batch = " + big;
  if (m.per_example) {
    why += std::string(why.empty() ? "" : "; ") +
           "per_example: exact per-example gradient norms of every Linear and Conv2d layer "
           "over " +
           big;
  }
  if (o.two_batch && !m.two_batch)
    why += "; two_batch off: one process with train.accum_steps = 1 has no small batch";
  if (o.per_example && !m.per_example) why += "; per_example off: " + support.reason;
  m.reason = why;
  return m;
}

}  // namespace lbt::noise
