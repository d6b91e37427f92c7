// Reference optimizers: each step is a sequence of whole-segment passes in double, in the order
// of the paper's algorithm box; see reference.hpp. Keep this file plain, not fast.
#include "optim/reference/reference.hpp"

#include <cmath>
#include <vector>

#include "optim/trust_ratio.hpp"

namespace lbt::optim::reference {

namespace {

using Vec = std::vector<double>;

Vec load(const float* x, std::size_t n) {
  return Vec(x, x + n);
}
void store(const Vec& x, float* out) {
  for (std::size_t i = 0; i < x.size(); ++i) out[i] = static_cast<float>(x[i]);
}
double norm(const Vec& x) {
  double s = 0;
  for (double xi : x) s += xi * xi;
  return std::sqrt(s);
}

}  // namespace

Sgd::Sgd(SgdOptions o, std::size_t n) : o_(o) {
  if (o_.momentum > 0) state_.add("momentum", n);
}

void Sgd::step(const StepInput& in) {
  for (const Segment& seg : in.segments) {
    Vec w = load(in.params.data() + seg.offset, seg.size),
        g = load(in.grads.data() + seg.offset, seg.size);
    const double wd = seg.weight_decay ? o_.weight_decay : 0.0;
    // 1. coupled decay: g = g + wd w
    for (std::size_t i = 0; i < w.size(); ++i) g[i] += wd * w[i];
    // 2. momentum: buf = g at step 0, else mu buf + (1 - dampening) g; Nesterov: d = g + mu buf
    Vec d = g;
    if (o_.momentum > 0) {
      float* buf_f = state_.get("momentum").data() + seg.offset;
      Vec buf = load(buf_f, seg.size);
      for (std::size_t i = 0; i < w.size(); ++i)
        buf[i] = in.step == 0 ? g[i] : o_.momentum * buf[i] + (1 - o_.dampening) * g[i];
      for (std::size_t i = 0; i < w.size(); ++i)
        d[i] = o_.nesterov ? g[i] + o_.momentum * buf[i] : buf[i];
      store(buf, buf_f);
    }
    // 3. w = w - lr d
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= in.lr * d[i];
    store(w, in.params.data() + seg.offset);
  }
}

Adam::Adam(AdamOptions o, std::size_t n) : o_(o) {
  state_.add("m", n);
  state_.add("v", n);
}

void Adam::step(const StepInput& in) {
  const double t = static_cast<double>(in.step + 1);
  for (const Segment& seg : in.segments) {
    Vec w = load(in.params.data() + seg.offset, seg.size),
        g = load(in.grads.data() + seg.offset, seg.size);
    float* m_f = state_.get("m").data() + seg.offset;
    float* v_f = state_.get("v").data() + seg.offset;
    Vec m = load(m_f, seg.size), v = load(v_f, seg.size);
    const double wd = seg.weight_decay ? o_.weight_decay : 0.0;
    // 1. Adam: coupled L2, g = g + wd w
    if (!o_.decoupled)
      for (std::size_t i = 0; i < w.size(); ++i) g[i] += wd * w[i];
    // 2. moments
    for (std::size_t i = 0; i < w.size(); ++i) m[i] = o_.beta1 * m[i] + (1 - o_.beta1) * g[i];
    for (std::size_t i = 0; i < w.size(); ++i)
      v[i] = o_.beta2 * v[i] + (1 - o_.beta2) * g[i] * g[i];
    // 3. bias correction and direction
    Vec r(w.size());
    const double bc1 = 1 - std::pow(o_.beta1, t), bc2 = 1 - std::pow(o_.beta2, t);
    for (std::size_t i = 0; i < w.size(); ++i) {
      const double m_hat = m[i] / bc1, v_hat = v[i] / bc2;
      r[i] = m_hat / (o_.eps_inside_sqrt ? std::sqrt(v_hat + o_.eps) : std::sqrt(v_hat) + o_.eps);
    }
    // 4. AdamW: decoupled decay, then the step
    const double decoupled = o_.decoupled ? wd : 0.0;
    for (std::size_t i = 0; i < w.size(); ++i)
      w[i] = w[i] - in.lr * decoupled * w[i] - in.lr * r[i];
    store(w, in.params.data() + seg.offset);
    store(m, m_f);
    store(v, v_f);
  }
}

Lars::Lars(LarsOptions o, std::size_t n) : o_(o) {
  if (o_.momentum > 0) state_.add("momentum", n);
}

void Lars::step(const StepInput& in) {
  for (const Segment& seg : in.segments) {
    Vec w = load(in.params.data() + seg.offset, seg.size),
        g = load(in.grads.data() + seg.offset, seg.size);
    const double beta = seg.weight_decay ? o_.weight_decay : 0.0;
    // 1. decay: d = g + beta w
    Vec d(w.size());
    for (std::size_t i = 0; i < w.size(); ++i) d[i] = g[i] + beta * w[i];
    // 2. trust ratio: local_lr = eta |w| / (|g| + beta |w|)  (or / |g + beta w|)
    double local_lr = 1.0;
    if (seg.trust_ratio) {
      const double w_norm = norm(w);
      const double denominator =
          o_.denominator == LarsDenominator::kPaper ? norm(g) + beta * w_norm : norm(d);
      // phi clamps the ratio before eta.
      double ratio = w_norm / (denominator + o_.eps);
      if (o_.phi.phi == Phi::kClamp) ratio = std::clamp(ratio, o_.phi.clamp_min, o_.phi.clamp_max);
      local_lr = o_.safe_zero_norm && (w_norm == 0 || denominator == 0)
                     ? 1.0
                     : o_.trust_coefficient * ratio;
    }
    // 3. lr: classic puts lr * local_lr inside the momentum, popular only local_lr
    const bool before = o_.lr_placement == LarsLrPlacement::kBeforeMomentum;
    for (std::size_t i = 0; i < w.size(); ++i) d[i] *= before ? in.lr * local_lr : local_lr;
    // 4. momentum: v = m v + d; w = w - v (classic) or w - lr v (popular)
    Vec v = d;
    float* v_f = o_.momentum > 0 ? state_.get("momentum").data() + seg.offset : nullptr;
    if (v_f) {
      Vec v_old = load(v_f, seg.size);
      for (std::size_t i = 0; i < w.size(); ++i) v[i] = o_.momentum * v_old[i] + d[i];
      store(v, v_f);
    }
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= (before ? 1.0 : in.lr) * v[i];
    store(w, in.params.data() + seg.offset);
  }
}

Larc::Larc(LarcOptions o, std::unique_ptr<Optimizer> base, std::size_t n)
    : o_(o), base_(std::move(base)), scaled_grads_(n) {}

void Larc::step(const StepInput& in) {
  for (const Segment& seg : in.segments) {
    Vec w = load(in.params.data() + seg.offset, seg.size),
        g = load(in.grads.data() + seg.offset, seg.size);
    const double wd = seg.weight_decay ? o_.weight_decay : 0.0;
    const double w_norm = norm(w), g_norm = norm(g);
    // Apex: only when both norms are nonzero: local_lr, clip/scale, g = (g + wd w) * factor
    double factor = 1.0, decay = wd;
    if (seg.trust_ratio) {
      if (w_norm != 0 && g_norm != 0) {
        const double local_lr = o_.trust_coefficient * w_norm / (g_norm + w_norm * wd + o_.eps);
        factor = o_.mode == LarcMode::kClip ? std::min(local_lr / in.lr, 1.0) : local_lr;
      } else {
        decay = 0.0;
      }
    }
    for (std::size_t i = 0; i < w.size(); ++i) g[i] = (g[i] + decay * w[i]) * factor;
    store(g, scaled_grads_.data() + seg.offset);
  }
  // The base optimizer's own step (its weight decay is 0) on the rescaled gradient.
  StepInput base_in = in;
  base_in.grads = std::span<const float>(scaled_grads_.data(), in.grads.size());
  base_->step(base_in);
}

Lamb::Lamb(LambOptions o, std::size_t n) : o_(o) {
  state_.add("m", n);
  state_.add("v", n);
}

void Lamb::step(const StepInput& in) {
  const double t = static_cast<double>(in.step + 1);
  for (const Segment& seg : in.segments) {
    Vec w = load(in.params.data() + seg.offset, seg.size),
        g = load(in.grads.data() + seg.offset, seg.size);
    float* m_f = state_.get("m").data() + seg.offset;
    float* v_f = state_.get("v").data() + seg.offset;
    Vec m = load(m_f, seg.size), v = load(v_f, seg.size);
    const double lambda = seg.weight_decay ? o_.weight_decay : 0.0;
    // 1. moments (Alg. 2 lines 6-7), bias correction (line 8)
    for (std::size_t i = 0; i < w.size(); ++i) m[i] = o_.beta1 * m[i] + (1 - o_.beta1) * g[i];
    for (std::size_t i = 0; i < w.size(); ++i)
      v[i] = o_.beta2 * v[i] + (1 - o_.beta2) * g[i] * g[i];
    const double bc1 = o_.bias_correction ? 1 - std::pow(o_.beta1, t) : 1.0;
    const double bc2 = o_.bias_correction ? 1 - std::pow(o_.beta2, t) : 1.0;
    // 2. Adam direction r (line 9), then decoupled decay u = r + lambda w
    Vec u(w.size());
    for (std::size_t i = 0; i < w.size(); ++i)
      u[i] = (m[i] / bc1) / (std::sqrt(v[i] / bc2) + o_.eps);
    for (std::size_t i = 0; i < w.size(); ++i) u[i] += lambda * w[i];
    // 3. trust ratio phi(|w| / |u|), 1 when a norm is 0 (line 10)
    const bool applies =
        o_.scope == LambScope::kDecayed ? seg.weight_decay && o_.weight_decay > 0 : seg.trust_ratio;
    double ratio = 1.0;
    if (applies) {
      const double w_norm = norm(w), u_norm = norm(u);
      ratio = w_norm == 0 || u_norm == 0 ? 1.0 : w_norm / u_norm;
      if (o_.phi.phi == Phi::kClamp) ratio = std::clamp(ratio, o_.phi.clamp_min, o_.phi.clamp_max);
    }
    // 4. w = w - lr * ratio * u
    for (std::size_t i = 0; i < w.size(); ++i) w[i] -= in.lr * ratio * u[i];
    store(w, in.params.data() + seg.offset);
    store(m, m_f);
    store(v, v_f);
  }
}

std::unique_ptr<Optimizer> make_reference_optimizer(const OptimizerOptions& o, std::size_t n) {
  const auto base = [&](const std::string& name) -> std::unique_ptr<Optimizer> {
    if (name == "adam" || name == "adamw") return std::make_unique<Adam>(o.adam, n);
    return std::make_unique<Sgd>(o.sgd, n);
  };
  if (o.name == "lars") return std::make_unique<Lars>(o.lars, n);
  if (o.name == "lamb") return std::make_unique<Lamb>(o.lamb, n);
  if (o.name == "larc") return std::make_unique<Larc>(o.larc, base(o.larc_base), n);
  return base(o.name);
}

}  // namespace lbt::optim::reference
