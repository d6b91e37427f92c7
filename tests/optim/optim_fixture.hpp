// Shared helpers for the optim tests: a small segment table with a bias, optimizers built from
// TOML text through the real config path, and a one-call step.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_keys.hpp"
#include "optim/optimizer_options.hpp"
#include "optim/reference/reference.hpp"

namespace lbt::test {

// fc.weight [4], fc.bias [2] (no decay, no trust ratio by default), out.weight [3].
struct SmallProblem {
  std::vector<Segment> segments = {make_segment("fc.weight", 0, 4, ParamKind::kWeight),
                                   make_segment("fc.bias", 4, 2, ParamKind::kBias),
                                   make_segment("out.weight", 6, 3, ParamKind::kWeight)};
  std::vector<float> w = {0.5f, -1.0f, 0.25f, 2.0f, 0.1f, -0.2f, 1.5f, -0.5f, 0.75f};
  std::vector<float> g = {0.1f, 0.2f, -0.3f, 0.4f, 0.05f, -0.01f, -0.2f, 0.3f, 0.1f};
};

// The optimizer options of TOML text, validated against the optimizer keys as a command does.
inline optim::OptimizerOptions options_of(const std::string& toml) {
  Config c = Config::from_string(toml);
  Schema schema;
  schema.add(optim::optimizer_keys());
  c.validate(schema);
  return optim::read_optimizer_options(c);
}

inline std::unique_ptr<optim::Optimizer> build(const std::string& toml, std::size_t n) {
  return optim::make_optimizer(options_of(toml), n);
}

inline std::unique_ptr<optim::Optimizer> build_reference(const std::string& toml, std::size_t n) {
  return optim::reference::make_reference_optimizer(options_of(toml), n);
}

inline void do_step(optim::Optimizer& opt, std::vector<float>& w, const std::vector<float>& g,
                    const std::vector<Segment>& segments, double lr, std::int64_t step) {
  opt.step({w, g, segments, lr, step});
}

// Segment norm in double, as the paper writes |x|.
inline double norm(const std::vector<double>& x, std::size_t begin, std::size_t end) {
  double s = 0;
  for (std::size_t i = begin; i < end; ++i) s += x[i] * x[i];
  return std::sqrt(s);
}

}  // namespace lbt::test
