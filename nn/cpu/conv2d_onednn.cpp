// OnednnConv; see conv2d_onednn.hpp. Per batch size: the three primitives (forward training,
// backward data, backward weights; oneDNN's convolution_auto with layouts `any`) and, per
// tensor whose chosen layout differs from lbt's, a copy in that layout and the reorders.
#include "nn/cpu/conv2d_onednn.hpp"

#include <cstring>
#include <stdexcept>

#include "core/cpu_path.hpp"
#include "core/kernel_choice.hpp"

#ifdef LBT_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace lbt::nn {

bool OnednnConv::available() {
#ifdef LBT_HAVE_DNNL
  static const bool on = kernel_choice(KernelChoice::kConv) == "onednn";
  return on;
#else
  return false;
#endif
}

bool OnednnConv::takes_strided_3x3() {
  return available() && cpu_path() == CpuPath::kAvx2;
}

#ifdef LBT_HAVE_DNNL

namespace {

// On the AVX2 path oneDNN is held to AVX2 as well (before its first kernel is generated), so a
// forced LBT_CPU=avx2 on an AVX-512 machine runs what an AVX2 machine runs.
const dnnl::engine& cpu_engine() {
  static const dnnl::engine engine = [] {
    if (cpu_path() == CpuPath::kAvx2) dnnl::set_max_cpu_isa(dnnl::cpu_isa::avx2);
    return dnnl::engine(dnnl::engine::kind::cpu, 0);
  }();
  return engine;
}

// One tensor as a primitive takes it: lbt's buffer itself where the layouts agree, else a copy
// in the primitive's layout with the reorder into it (an input) or out of it (an output).
struct Staged {
  dnnl::memory plain, staged;
  dnnl::reorder reorder;
  bool copied = false;

  Staged(const dnnl::memory::desc& lbt_layout, const dnnl::memory::desc& wanted, bool input)
      : plain(lbt_layout, cpu_engine(), DNNL_MEMORY_NONE) {
    copied = lbt_layout != wanted;
    staged = copied ? dnnl::memory(wanted, cpu_engine()) : plain;
    if (copied) reorder = input ? dnnl::reorder(plain, staged) : dnnl::reorder(staged, plain);
  }
  // Points at lbt's buffer (an input) and copies it into the primitive's layout.
  const dnnl::memory& in(dnnl::stream& s, const float* data) {
    plain.set_data_handle(const_cast<float*>(data));
    if (copied) reorder.execute(s, plain, staged);
    return staged;
  }
  const dnnl::memory& out(float* data) {
    plain.set_data_handle(data);
    return staged;
  }
  void write_back(dnnl::stream& s) {
    if (copied) reorder.execute(s, staged, plain);
  }
};

}  // namespace

struct OnednnConv::Primitives {
  dnnl::stream stream{cpu_engine()};
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data backward_data;
  dnnl::convolution_backward_weights backward_weights;
  // forward: x, W, y; backward data: dy, W, dx; backward weights: x, dy, dW.
  std::unique_ptr<Staged> fx, fw, fy, dy, dw_in, dx, wx, wdy, dw;
};

OnednnConv::Primitives& OnednnConv::at(std::int64_t batch) {
  auto& slot = by_batch_[batch];
  if (slot) return *slot;
  using dnnl::memory;
  using tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  const memory::dims src{batch, in_.c, in_.h, in_.w}, dst{batch, out_.c, out_.h, out_.w},
      wei{out_.c, in_.c, kernel_, kernel_}, strides{stride_, stride_}, pad{padding_, padding_};
  const memory::desc x_nchw(src, f32, tag::nchw), y_nchw(dst, f32, tag::nchw),
      w_oihw(wei, f32, tag::oihw);
  const auto any = [&](const memory::dims& d) { return memory::desc(d, f32, tag::any); };
  const auto alg = dnnl::algorithm::convolution_auto;
  auto p = std::make_unique<Primitives>();
  const dnnl::convolution_forward::primitive_desc fwd(
      {dnnl::prop_kind::forward_training, alg, any(src), any(wei), any(dst), strides, pad, pad},
      cpu_engine());
  p->forward = dnnl::convolution_forward(fwd);
  p->fx = std::make_unique<Staged>(x_nchw, fwd.src_desc(), true);
  p->fw = std::make_unique<Staged>(w_oihw, fwd.weights_desc(), true);
  p->fy = std::make_unique<Staged>(y_nchw, fwd.dst_desc(), false);
  const dnnl::convolution_backward_data::primitive_desc bwd_data(
      {alg, any(src), any(wei), any(dst), strides, pad, pad}, cpu_engine(), fwd);
  p->backward_data = dnnl::convolution_backward_data(bwd_data);
  p->dy = std::make_unique<Staged>(y_nchw, bwd_data.diff_dst_desc(), true);
  p->dw_in = std::make_unique<Staged>(w_oihw, bwd_data.weights_desc(), true);
  p->dx = std::make_unique<Staged>(x_nchw, bwd_data.diff_src_desc(), false);
  const dnnl::convolution_backward_weights::primitive_desc bwd_w(
      {alg, any(src), any(wei), any(dst), strides, pad, pad}, cpu_engine(), fwd);
  p->backward_weights = dnnl::convolution_backward_weights(bwd_w);
  p->wx = std::make_unique<Staged>(x_nchw, bwd_w.src_desc(), true);
  p->wdy = std::make_unique<Staged>(y_nchw, bwd_w.diff_dst_desc(), true);
  p->dw = std::make_unique<Staged>(w_oihw, bwd_w.diff_weights_desc(), false);
  slot = std::move(p);
  return *slot;
}

void OnednnConv::forward(const float* x, const float* w, float* y, std::int64_t batch) {
  Primitives& p = at(batch);
  p.forward.execute(p.stream, {{DNNL_ARG_SRC, p.fx->in(p.stream, x)},
                               {DNNL_ARG_WEIGHTS, p.fw->in(p.stream, w)},
                               {DNNL_ARG_DST, p.fy->out(y)}});
  p.fy->write_back(p.stream);
  p.stream.wait();
  forward_x_ = x;
  forward_batch_ = batch;
}

void OnednnConv::backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                          std::int64_t batch, bool accumulate) {
  Primitives& p = at(batch);
  const std::size_t wsize = static_cast<std::size_t>(out_.c * in_.c * kernel_ * kernel_);
  dw_scratch_.resize(wsize);
  // The weight gradient's x is the forward's copy where both took the same layout and x is
  // the buffer the last forward read (a training step: forward then backward on one input).
  const bool reuse_x = x == forward_x_ && batch == forward_batch_ && p.fx->copied &&
                       p.wx->staged.get_desc() == p.fx->staged.get_desc();
  const dnnl::memory& wdy = p.wdy->in(p.stream, dy);
  p.backward_weights.execute(p.stream,
                             {{DNNL_ARG_SRC, reuse_x ? p.fx->staged : p.wx->in(p.stream, x)},
                              {DNNL_ARG_DIFF_DST, wdy},
                              {DNNL_ARG_DIFF_WEIGHTS, p.dw->out(dw_scratch_.data())}});
  p.dw->write_back(p.stream);
  if (dx) {
    const bool same_dy = p.dy->staged.get_desc() == p.wdy->staged.get_desc() && p.dy->copied;
    p.backward_data.execute(p.stream, {{DNNL_ARG_DIFF_DST, same_dy ? wdy : p.dy->in(p.stream, dy)},
                                       {DNNL_ARG_WEIGHTS, p.dw_in->in(p.stream, w)},
                                       {DNNL_ARG_DIFF_SRC, p.dx->out(dx)}});
    p.dx->write_back(p.stream);
  }
  p.stream.wait();
  const float* g = dw_scratch_.data();
  if (accumulate) {
    for (std::size_t i = 0; i < wsize; ++i) dw[i] += g[i];
  } else {
    std::memcpy(dw, g, wsize * sizeof(float));
  }
}

std::int64_t OnednnConv::workspace_bytes(std::int64_t batch) const {
  // Estimated from the tensors' sizes before the primitives exist (blocked layouts of channel
  // counts that are multiples of 8 add no padding): x and y, dy and dx, x and dy for the
  // weight gradient, three copies of W and the weight-gradient scratch.
  const std::int64_t x = batch * in_.size(), y = batch * out_.size(),
                     w = out_.c * in_.c * kernel_ * kernel_;
  return static_cast<std::int64_t>(sizeof(float)) * (3 * x + 3 * y + 5 * w);
}

#else  // without oneDNN: never constructed (available() is false)

struct OnednnConv::Primitives {};
OnednnConv::Primitives& OnednnConv::at(std::int64_t) {
  throw std::logic_error("OnednnConv: this build has no oneDNN");
}
void OnednnConv::forward(const float*, const float*, float*, std::int64_t) {
  at(0);
}
void OnednnConv::backward(const float*, const float*, const float*, float*, float*, std::int64_t,
                          bool) {
  at(0);
}
std::int64_t OnednnConv::workspace_bytes(std::int64_t) const {
  return 0;
}

#endif

OnednnConv::OnednnConv(Shape3 in, Shape3 out, std::int64_t kernel, std::int64_t stride,
                       std::int64_t padding)
    : in_(in), out_(out), kernel_(kernel), stride_(stride), padding_(padding) {}

OnednnConv::~OnednnConv() = default;

}  // namespace lbt::nn
