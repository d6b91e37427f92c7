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

// The [optimizer] table bodies of every optimizer and variant: SGD, momentum, Nesterov, Adam
// (eps inside and outside the root), AdamW, LARS's denominators and placements, LARC's modes
// over its bases, LAMB's options.
inline const std::vector<std::string>& every_variant() {
  static const std::vector<std::string> variants = {
      "name='sgd'\nmomentum=0.0\nweight_decay=0.01",
      "name='momentum'\nmomentum=0.9\ndampening=0.1\nweight_decay=0.01",
      "name='nesterov'\nmomentum=0.9\nweight_decay=0.001",
      "name='adam'\nweight_decay=0.01",
      "name='adam'\neps_inside_sqrt=true\neps=1e-6",
      "name='adamw'\nweight_decay=0.1",
      "name='lars'\n[optimizer.lars]\ndenominator='paper'\nlr_placement='before_momentum'",
      "name='lars'\nweight_decay=0.01\n[optimizer.lars]\ndenominator='exact'\nlr_placement='after_"
      "momentum'",
      "name='lars'\nmomentum=0.0\n[optimizer.lars]\nsafe_zero_norm=false\neps=1e-3\ntrust_"
      "coefficient=0.01",
      "name='lars'\n[optimizer.lars]\nphi='clamp'\nclamp_min=0.001\nclamp_max=0.002",
      "name='larc'\nweight_decay=0.01\n[optimizer.larc]\nmode='clip'\nbase='momentum'",
      "name='larc'\nweight_decay=0.01\n[optimizer.larc]\nmode='scale'\nbase='nesterov'",
      "name='larc'\n[optimizer.larc]\nmode='clip'\nbase='adamw'",
      "name='larc'\n[optimizer.larc]\nmode='scale'\nbase='adam'\ntrust_coefficient=0.5",
      "name='lamb'",
      "name='lamb'\n[optimizer.lamb]\nphi='clamp'\nclamp_min=0.5\nclamp_max=2.0",
      "name='lamb'\nweight_decay=0.0\n[optimizer.lamb]\nscope='decayed'\nbias_correction=false",
  };
  return variants;
}

// Segment norm in double, as the paper writes |x|.
inline double norm(const std::vector<double>& x, std::size_t begin, std::size_t end) {
  double s = 0;
  for (std::size_t i = begin; i < end; ++i) s += x[i] * x[i];
  return std::sqrt(s);
}

}  // namespace lbt::test
