// SGD with momentum; see sgd.hpp.
#include "optim/sgd.hpp"

#include <cmath>
#include <sstream>

namespace lbt::optim {

SgdOptions read_sgd_options(Config& config) {
  SgdOptions o;
  o.momentum = config.get_double("optimizer.momentum", o.momentum, "momentum coefficient in [0, 1)");
  o.weight_decay = config.get_double("optimizer.weight_decay", o.weight_decay, "L2 weight decay >= 0");
  validate(o, config);
  return o;
}

void validate(const SgdOptions& o, const Config& config) {
  if (!(o.momentum >= 0.0 && o.momentum < 1.0)) {
    config.fail("optimizer.momentum", "in [0, 1)", std::to_string(o.momentum));
  }
  if (!(o.weight_decay >= 0.0)) {
    config.fail("optimizer.weight_decay", ">= 0", std::to_string(o.weight_decay));
  }
}

Sgd::Sgd(SgdOptions options, std::size_t num_params) : options_(options) {
  if (options_.momentum > 0.0) state_.add("momentum", num_params);
}

void Sgd::step(const StepInput& in) {
  const float lr = static_cast<float>(in.lr);
  const float mu = static_cast<float>(options_.momentum);
  float* buf = options_.momentum > 0.0 ? state_.get("momentum").data() : nullptr;
  for (const Segment& seg : in.segments) {
    const float wd = seg.weight_decay ? static_cast<float>(options_.weight_decay) : 0.0f;
    float* w = in.params.data() + seg.offset;
    const float* g = in.grads.data() + seg.offset;
    if (buf) {
      float* m = buf + seg.offset;
#pragma omp parallel for simd schedule(static) if (seg.size > 32768)
      for (std::size_t i = 0; i < seg.size; ++i) {
        m[i] = mu * m[i] + (g[i] + wd * w[i]);  // buf = mu*buf + (g + wd*w)
        w[i] -= lr * m[i];                      // w -= lr*buf
      }
    } else {
#pragma omp simd
      for (std::size_t i = 0; i < seg.size; ++i) w[i] -= lr * (g[i] + wd * w[i]);
    }
  }
}

std::string Sgd::describe() const {
  std::ostringstream ss;
  ss << "SGD(momentum=" << options_.momentum << ", wd=" << options_.weight_decay << ")";
  return ss.str();
}

}  // namespace lbt::optim
