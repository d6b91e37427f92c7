// Each distinct convolution of the two CNNs lbt benchmarks (cnn:simple on 1x28x28 and resnet:8
// on 3x32x32, as nn/model_zoo.cpp lists them), one training pass of that layer alone: forward,
// input gradient dx (not for a model's first layer, for which lbt's model computes none) and
// weight gradient dW (+ db where the layer has a bias). By lbt's Conv2d (nn/cpu/conv2d*.cpp, made
// by the CPU backend as the model builder makes it; the model's fusions with the BatchNorm around
// a ResNet conv are not part of it) beside oneDNN's convolution primitives (convolution_auto,
// formats `any`; where auto takes Winograd, convolution_direct too, as onednn_direct_*). Issue
// 39: keep a hand-written kernel only where it wins.
//   onednn_nchw_io   INCLUDES the reorders lbt's model would need: x, dy and W from lbt's NCHW /
//                    OIHW buffers into oneDNN's chosen layouts and y, dx and dW back (each only
//                    where the chosen layout differs; once per tensor and layout per pass).
//   onednn_blocked   the three primitives alone, their operands already in oneDNN's layouts
//                    (a network kept in blocked layouts throughout): NO reorders timed.
// Before timing, oneDNN's y, dx, dW and db are checked against lbt's (max |difference| / max
// |lbt's value|, on stderr); a forward worse than 1e-4 aborts. Milliseconds per pass, median
// [min-max] of 0.2 s windows (bench/harness.hpp). The last column names the path: lbt's kernel
// (Conv2d::path_name) or oneDNN's implementations (forward / backward data / backward weights)
// and the reorders _nchw_io runs. bench/run_conv_libraries.sh runs it natively and held to AVX2.
//   usage: bench_conv_libraries [--batches 32,128,512] [--threads 2] [--seconds 1]
#include <omp.h>
#include <dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench/harness.hpp"
#include "core/gemm.hpp"
#include "core/rng.hpp"
#include "core/tensor.hpp"
#include "nn/backend.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/layer_spec.hpp"
#include "nn/shape.hpp"

using namespace lbt;

namespace {

// One convolution of a model, as its model builds it.
struct ConvLayer {
  std::string model;
  nn::Shape3 in;
  nn::Conv2dOptions opt;
  bool input_grad = true;  // false for the model's first layer: its dx is never asked for
};

std::string describe(const ConvLayer& l) {
  const nn::Conv2dOptions& o = l.opt;
  return "conv " + std::to_string(l.in.c) + "->" + std::to_string(o.out_channels) + " " +
         std::to_string(o.kernel) + "x" + std::to_string(o.kernel) + " s" +
         std::to_string(o.stride) + " on " + std::to_string(l.in.h) + "x" + std::to_string(l.in.w) +
         (o.bias ? " +bias" : "") + (l.input_grad ? "" : " no-dx");
}

bool same_layer(const ConvLayer& a, const ConvLayer& b) {
  return a.in == b.in && a.opt.out_channels == b.opt.out_channels && a.opt.kernel == b.opt.kernel &&
         a.opt.stride == b.opt.stride && a.opt.padding == b.opt.padding &&
         a.opt.bias == b.opt.bias && a.input_grad == b.input_grad;
}

// The distinct convolutions of a spec string's layers, following the shapes through them; a
// residual block holds conv1 (3x3, the block's stride), conv2 (3x3) and, where the shape
// changes, a 1x1 projection, as nn/cpu/basic_block.cpp builds it.
std::vector<ConvLayer> conv_layers(const std::string& spec) {
  const nn::ExpandedSpec expanded = nn::expand_spec(spec, {});
  const std::vector<std::int64_t>& s = expanded.input_shape;
  nn::Shape3 shape{s[0], s[1], s[2]};
  std::vector<ConvLayer> out;
  const auto add = [&](nn::Shape3 in, nn::Conv2dOptions opt, bool first) {
    const ConvLayer l{spec, in, opt, !first};
    if (std::none_of(out.begin(), out.end(), [&](const ConvLayer& o) { return same_layer(o, l); }))
      out.push_back(l);
    return nn::Shape3{opt.out_channels, nn::window_out(in.h, opt.kernel, opt.stride, opt.padding),
                      nn::window_out(in.w, opt.kernel, opt.stride, opt.padding)};
  };
  for (std::size_t i = 0; i < expanded.layers.size(); ++i) {
    const nn::LayerSpec& l = expanded.layers[i];
    if (l.type == "conv") {
      shape = add(shape,
                  {.out_channels = l.out,
                   .kernel = l.kernel,
                   .stride = l.stride,
                   .padding = l.padding,
                   .bias = l.bias},
                  i == 0);
    } else if (l.type == "pool") {
      shape = {shape.c, nn::window_out(shape.h, l.kernel, l.stride, 0),
               nn::window_out(shape.w, l.kernel, l.stride, 0)};
    } else if (l.type == "residual") {
      const nn::Shape3 in = shape;
      shape = add(
          in, {.out_channels = l.out, .kernel = 3, .stride = l.stride, .padding = 1, .bias = false},
          false);
      add(shape, {.out_channels = l.out, .kernel = 3, .stride = 1, .padding = 1, .bias = false},
          false);
      if (l.stride != 1 || in.c != l.out)
        add(in,
            {.out_channels = l.out, .kernel = 1, .stride = l.stride, .padding = 0, .bias = false},
            false);
    } else if (l.type == "linear" || l.type == "global_avgpool") {
      break;  // no convolution after these
    }
  }
  return out;
}

// One layer's activations and gradients at one batch, NCHW as lbt keeps them.
struct Buffers {
  AlignedBuffer x, y, dy, dx;
};

Buffers buffers(const nn::Shape3& in, const nn::Shape3& out, std::int64_t batch, Rng& rng) {
  std::normal_distribution<float> normal;
  Buffers b;
  b.x.resize(static_cast<std::size_t>(batch * in.size()));
  b.dx.resize(static_cast<std::size_t>(batch * in.size()));
  b.y.resize(static_cast<std::size_t>(batch * out.size()));
  b.dy.resize(static_cast<std::size_t>(batch * out.size()));
  for (std::size_t i = 0; i < b.x.size(); ++i) b.x[i] = normal(rng);
  for (std::size_t i = 0; i < b.dy.size(); ++i) b.dy[i] = 0.01f * normal(rng);
  return b;
}

// lbt's layer with its own parameter store: W from its He init, a random bias where it has one
// (so the check sees it).
struct LbtConv {
  ParameterStore store;
  std::unique_ptr<nn::Layer> layer;
  nn::Conv2d* conv = nullptr;

  explicit LbtConv(const ConvLayer& l, Rng& rng) {
    layer = nn::cpu_backend().conv2d(l.in, l.opt, nn::InitScheme::kHe);
    conv = dynamic_cast<nn::Conv2d*>(layer.get());
    if (!conv) std::abort();
    conv->register_params(store, "conv");
    store.allocate();
    conv->bind(store);
    conv->init(rng);
    if (l.opt.bias) {
      std::normal_distribution<float> normal;
      float* b = store.param_ptr(conv->bias_segment());
      for (std::int64_t o = 0; o < l.opt.out_channels; ++o) b[o] = 0.1f * normal(rng);
    }
  }
  const float* w() { return store.param_ptr(conv->weight_segment()); }
  const float* b() {
    return conv->options().bias ? store.param_ptr(conv->bias_segment()) : nullptr;
  }
  const float* dw() { return store.grad_ptr(conv->weight_segment()); }
  const float* db() {
    return conv->options().bias ? store.grad_ptr(conv->bias_segment()) : nullptr;
  }

  void pass(Buffers& buf, std::int64_t batch, bool input_grad) {
    conv->forward(buf.x.data(), buf.y.data(), batch, true);
    conv->backward(buf.x.data(), buf.y.data(), buf.dy.data(), input_grad ? buf.dx.data() : nullptr,
                   batch, false);
  }
};

// oneDNN's forward, backward-data and backward-weights primitives for one layer and batch, as a
// list of steps over lbt-layout ("plain") memories: reorders into the formats oneDNN chose, the
// primitives, reorders back. run(false) skips the reorders (the blocked copies keep the values
// the last run(true) put there).
class OnednnConv {
 public:
  OnednnConv(const ConvLayer& l, const nn::Shape3& out, std::int64_t batch, LbtConv& params,
             Buffers& buf, dnnl::algorithm alg)
      : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {
    using dnnl::memory;
    using tag = memory::format_tag;
    const memory::data_type f32 = memory::data_type::f32;
    const std::int64_t K = l.opt.kernel, S = l.opt.stride, P = l.opt.padding;
    const memory::dims src{batch, l.in.c, l.in.h, l.in.w}, dst{batch, out.c, out.h, out.w},
        wei{out.c, l.in.c, K, K}, bias{out.c}, strides{S, S}, pad{P, P};
    const auto plain = [&](const memory::dims& d, tag t, const float* p) {
      return memory({d, f32, t}, engine_, const_cast<float*>(p));
    };
    const auto any = [&](const memory::dims& d) { return memory::desc(d, f32, tag::any); };
    has_bias_ = l.opt.bias;
    input_grad_ = l.input_grad;
    dw_.resize(static_cast<std::size_t>(out.c * l.in.c * K * K));
    db_.resize(static_cast<std::size_t>(out.c));
    y_.resize(static_cast<std::size_t>(batch * out.size()));
    dx_.resize(static_cast<std::size_t>(batch * l.in.size()));
    const memory x_m = plain(src, tag::nchw, buf.x.data()),
                 dy_m = plain(dst, tag::nchw, buf.dy.data());
    const memory w_m = plain(wei, tag::oihw, params.w()), y_m = plain(dst, tag::nchw, y_.data());
    const memory dx_m = plain(src, tag::nchw, dx_.data()), dw_m = plain(wei, tag::oihw, dw_.data());
    const memory b_m = has_bias_ ? plain(bias, tag::x, params.b()) : memory();
    const memory db_m = has_bias_ ? plain(bias, tag::x, db_.data()) : memory();

    const auto fwd_desc =
        has_bias_
            ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, any(src),
                                              any(wei), b_m.get_desc(), any(dst), strides, pad, pad)
            : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, any(src),
                                              any(wei), any(dst), strides, pad, pad);
    const dnnl::convolution_forward::primitive_desc fwd(fwd_desc, engine_);
    impl_ = fwd.impl_info_str();
    std::unordered_map<int, memory> fwd_args{{DNNL_ARG_SRC, input(x_m, fwd.src_desc())},
                                             {DNNL_ARG_WEIGHTS, input(w_m, fwd.weights_desc())},
                                             {DNNL_ARG_DST, output(y_m, fwd.dst_desc())}};
    if (has_bias_) fwd_args[DNNL_ARG_BIAS] = b_m;
    compute(dnnl::convolution_forward(fwd), fwd_args);

    if (input_grad_) {
      const dnnl::convolution_backward_data::desc bwd_data_desc(alg, any(src), any(wei), any(dst),
                                                                strides, pad, pad);
      const dnnl::convolution_backward_data::primitive_desc bwd_data(bwd_data_desc, engine_, fwd);
      impl_ += std::string(" / ") + bwd_data.impl_info_str();
      compute(dnnl::convolution_backward_data(bwd_data),
              {{DNNL_ARG_DIFF_DST, input(dy_m, bwd_data.diff_dst_desc())},
               {DNNL_ARG_WEIGHTS, input(w_m, bwd_data.weights_desc())},
               {DNNL_ARG_DIFF_SRC, output(dx_m, bwd_data.diff_src_desc())}});
    }

    const auto bwd_w_desc =
        has_bias_ ? dnnl::convolution_backward_weights::desc(
                        alg, any(src), any(wei), db_m.get_desc(), any(dst), strides, pad, pad)
                  : dnnl::convolution_backward_weights::desc(alg, any(src), any(wei), any(dst),
                                                             strides, pad, pad);
    const dnnl::convolution_backward_weights::primitive_desc bwd_w(bwd_w_desc, engine_, fwd);
    impl_ += std::string(" / ") + bwd_w.impl_info_str();
    std::unordered_map<int, memory> bwd_w_args{
        {DNNL_ARG_SRC, input(x_m, bwd_w.src_desc())},
        {DNNL_ARG_DIFF_DST, input(dy_m, bwd_w.diff_dst_desc())},
        {DNNL_ARG_DIFF_WEIGHTS, output(dw_m, bwd_w.diff_weights_desc())}};
    if (has_bias_) bwd_w_args[DNNL_ARG_DIFF_BIAS] = db_m;
    compute(dnnl::convolution_backward_weights(bwd_w), bwd_w_args);
  }

  // One training pass; with_reorders: from and to lbt's layouts as well.
  void run(bool with_reorders) {
    for (Step& s : steps_) {
      if (with_reorders || !s.reorder) s.primitive.execute(stream_, s.args);
    }
    stream_.wait();
  }
  bool winograd() const { return impl_.find("wino") != std::string::npos; }
  std::string impl() const { return impl_ + " (" + std::to_string(reorders()) + " reorders)"; }
  const float* y() const { return y_.data(); }
  const float* dx() const { return dx_.data(); }
  const float* dw() const { return dw_.data(); }
  const float* db() const { return has_bias_ ? db_.data() : nullptr; }

 private:
  struct Step {
    dnnl::primitive primitive;
    std::unordered_map<int, dnnl::memory> args;
    bool reorder;
  };

  int reorders() const {
    return static_cast<int>(
        std::count_if(steps_.begin(), steps_.end(), [](const Step& s) { return s.reorder; }));
  }
  // `plain` in the layout `want`: itself where they agree, else a copy made by a reorder step,
  // one per tensor and layout (the forward's reordered W serves the input gradient too).
  dnnl::memory input(const dnnl::memory& plain, const dnnl::memory::desc& want) {
    if (plain.get_desc() == want) return plain;
    for (const Converted& c : converted_) {
      if (c.from == plain.get_data_handle() && c.to.get_desc() == want) return c.to;
    }
    const dnnl::memory to(want, engine_);
    steps_.push_back({dnnl::reorder(plain, to), {{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, to}}, true});
    converted_.push_back({plain.get_data_handle(), to});
    return to;
  }
  // Where the primitive writes `plain` in the layout `have`: itself, or a copy that a reorder
  // after the primitive writes back.
  dnnl::memory output(const dnnl::memory& plain, const dnnl::memory::desc& have) {
    if (plain.get_desc() == have) return plain;
    const dnnl::memory from(have, engine_);
    pending_.push_back(
        {dnnl::reorder(from, plain), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, plain}}, true});
    return from;
  }
  void compute(const dnnl::primitive& p, const std::unordered_map<int, dnnl::memory>& args) {
    steps_.push_back({p, args, false});
    for (Step& s : pending_) steps_.push_back(std::move(s));
    pending_.clear();
  }

  struct Converted {
    void* from;
    dnnl::memory to;
  };
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::vector<Step> steps_, pending_;
  std::vector<Converted> converted_;
  bool has_bias_ = false, input_grad_ = true;
  AlignedBuffer y_, dx_, dw_, db_;
  std::string impl_;
};

// max |a - b| / max |b| over n values.
double relative_difference(const float* a, const float* b, std::size_t n) {
  double diff = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return scale > 0.0 ? diff / scale : diff;
}

// oneDNN's results of one pass against lbt's; aborts where the forwards disagree (same math).
void check(const ConvLayer& l, const nn::Shape3& out, std::int64_t batch, LbtConv& lbt,
           Buffers& buf, OnednnConv& dnn, const char* impl) {
  lbt.pass(buf, batch, l.input_grad);
  dnn.run(true);
  const auto n = [](std::int64_t v) { return static_cast<std::size_t>(v); };
  const double y = relative_difference(dnn.y(), buf.y.data(), n(batch * out.size()));
  const double dw =
      relative_difference(dnn.dw(), lbt.dw(), n(out.c * l.in.c * l.opt.kernel * l.opt.kernel));
  const auto text = [](double v) {  // "-" where the layer has no such tensor
    char buf[16];
    std::snprintf(buf, sizeof buf, "%.2e", v);
    return std::isnan(v) ? std::string("-") : std::string(buf);
  };
  const double dx = l.input_grad
                        ? relative_difference(dnn.dx(), buf.dx.data(), n(batch * l.in.size()))
                        : std::nan("");
  const double db = l.opt.bias ? relative_difference(dnn.db(), lbt.db(), n(out.c)) : std::nan("");
  std::fprintf(stderr, "check %s %s batch %lld %s vs lbt: max rel diff y %s dx %s dW %s db %s\n",
               l.model.c_str(), describe(l).c_str(), static_cast<long long>(batch), impl,
               text(y).c_str(), text(dx).c_str(), text(dw).c_str(), text(db).c_str());
  if (!(y <= 1e-4)) {
    std::fprintf(stderr, "oneDNN's forward differs from lbt's by more than 1e-4\n");
    std::abort();
  }
}

// One CSV row: ms per pass from the harness's samples/s (the fastest window: the least time).
void report(const ConvLayer& l, std::int64_t batch, const char* impl, const bench::Stats& s,
            const std::string& path) {
  const auto ms = [&](double rate) { return 1e3 * static_cast<double>(batch) / rate; };
  std::printf("%s,%s,%lld,%s,%.3f,%.3f,%.3f,%s\n", l.model.c_str(), describe(l).c_str(),
              static_cast<long long>(batch), impl, ms(s.median), ms(s.max), ms(s.min),
              path.c_str());
  std::fflush(stdout);
}

// oneDNN with `alg`, checked against lbt's last pass, with and without the reorders.
void measure_onednn(const ConvLayer& l, std::int64_t batch, const bench::Windows& windows,
                    LbtConv& lbt, Buffers& buf, OnednnConv& dnn, const std::string& prefix) {
  check(l, lbt.conv->out_shape(), batch, lbt, buf, dnn, prefix.c_str());
  report(l, batch, (prefix + "_nchw_io").c_str(),
         bench::samples_per_second([&](std::int64_t) { dnn.run(true); }, batch, windows),
         dnn.impl());
  report(l, batch, (prefix + "_blocked").c_str(),
         bench::samples_per_second([&](std::int64_t) { dnn.run(false); }, batch, windows),
         dnn.impl());
}

// lbt's layer, then oneDNN's convolution_auto and, where auto took Winograd somewhere,
// convolution_direct: auto's choice is not always oneDNN's fastest.
void measure(const ConvLayer& l, std::int64_t batch, const bench::Windows& windows) {
  Rng rng = make_rng(1, RngStream::kInit);
  LbtConv lbt(l, rng);
  const nn::Shape3 out = lbt.conv->out_shape();
  Buffers buf = buffers(l.in, out, batch, rng);
  report(l, batch, "lbt",
         bench::samples_per_second([&](std::int64_t) { lbt.pass(buf, batch, l.input_grad); }, batch,
                                   windows),
         lbt.conv->path_name());
  OnednnConv dnn(l, out, batch, lbt, buf, dnnl::algorithm::convolution_auto);
  measure_onednn(l, batch, windows, lbt, buf, dnn, "onednn");
  if (!dnn.winograd()) return;
  OnednnConv direct(l, out, batch, lbt, buf, dnnl::algorithm::convolution_direct);
  measure_onednn(l, batch, windows, lbt, buf, direct, "onednn_direct");
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args args(argc, argv);
  const std::vector<std::int64_t> batches = bench::parse_list(args.get("--batches", "32,128,512"));
  const int threads = static_cast<int>(args.get_int("--threads", 2));
  const bench::Windows windows{0.2, 3, 0.2, args.get_double("--seconds", 1.0)};
  set_num_threads(threads);
  omp_set_num_threads(threads);
  std::fprintf(stderr,
               "onednn*_nchw_io include the reorders to/from lbt's NCHW/OIHW layouts; "
               "onednn*_blocked time the primitives alone\n");
  std::printf("model,layer,batch,impl,median_ms_per_pass,min_ms,max_ms,path\n");
  std::vector<ConvLayer> layers = conv_layers("cnn:simple");
  for (const ConvLayer& l : conv_layers("resnet:8")) layers.push_back(l);
  for (const ConvLayer& l : layers) {
    for (const std::int64_t batch : batches) measure(l, batch, windows);
  }
}
