// 2-D convolution over NCHW images, y = W * x + b, W: [out_c, in_c, k, k] (PyTorch layout),
// optional bias [out_c]. Each OpenMP thread takes whole images with its own workspace, which
// stays in L2; single-threaded kernels run side by side instead of one 2-thread GEMM per image.
// Four paths of lbt's own: "same" convolutions (stride 1, 3x3 or 5x5, padding k/2) with in_c and
// out_c multiples of 16 use Winograd's minimal filtering (winograd.hpp); other "same" convolutions
// and 3x3 stride-2 padding-1 ones, with out_c a multiple of 8 (ResNet's and the simple CNN's), run
// directly over padded planes (conv_direct.hpp); 1x1 stride-2 ones (ResNet's projections) with
// channels and output planes multiples of 16 are products on the subsampled image
// (conv2d_subsampled.cpp); the rest use per-image im2col + GEMM (Chellapilla et al. 2006; Caffe's
// conv). On the AVX2 path 3x3 stride-2 ones without bias run oneDNN's primitives instead
// (conv2d_onednn.hpp), which beat the direct kernel there. Tests hold them equal.
#pragma once
#include <memory>
#include <vector>

#include "core/tensor.hpp"
#include "nn/cpu/conv2d_onednn.hpp"
#include "nn/cpu/conv_direct.hpp"
#include "nn/cpu/linear.hpp"
#include "nn/cpu/winograd.hpp"
#include "nn/layer.hpp"
#include "nn/layer_options.hpp"
#include "nn/shape.hpp"

namespace lbt::nn {

class Conv2d final : public Layer {
 public:
  Conv2d(Shape3 in, Conv2dOptions options, InitScheme init);
  std::string describe() const override;
  // The path the constructor chose, for reports (bench/conv_libraries.cpp): "winograd",
  // "direct (dW lanes)", "direct (dW im2col)", "1x1 subsampled", "oneDNN" or "im2col".
  const char* path_name() const;
  std::int64_t in_features() const override { return in_.size(); }
  std::int64_t out_features() const override { return out_.size(); }
  const char* param_prefix() const override { return "conv"; }
  std::int64_t macs_per_example() const override { return out_.size() * rows_; }
  std::int64_t workspace_bytes(std::int64_t batch, int threads) const override;
  void register_params(ParameterStore& store, const std::string& prefix) override;
  void bind(ParameterStore& store) override;
  void init(Rng& rng) override;
  // x: [batch, in_c, in_h, in_w] -> y: [batch, out_c, out_h, out_w]
  void forward(const float* x, float* y, std::int64_t batch, bool train) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, std::int64_t batch,
                bool accumulate) override;
  // backward() with dx = the input gradient + dx_addend (dx's shape; may be dx itself): a
  // residual block adds its shortcut's gradient in the pass that writes dx on the Winograd
  // and 1x1 stride-2 paths (one pass over dx fewer), in a separate pass on the others.
  // dy_map (not null only where reads_mapped_gradient(dx != nullptr); on the direct path
  // without dx_addend, on the 1x1 stride-2 one with none or dx itself): dy is the gradient at the
  // output of the BatchNorm after this layer, turned into the BatchNorm's input gradient (this
  // layer's output gradient) by the pass that copies it channels-last or into padded planes, where
  // that BatchNorm's own backward would write it out and this pass read it back.
  void backward_adding(const float* x, const float* dy, float* dx, const float* dx_addend,
                       std::int64_t batch, bool accumulate,
                       const BatchNormGradMap* dy_map = nullptr);

  Shape3 in_shape() const { return in_; }
  Shape3 out_shape() const override { return out_; }
  const Conv2dOptions& options() const { return opt_; }
  std::size_t weight_segment() const { return w_segment_; }
  std::size_t bias_segment() const { return b_segment_; }  // only when options().bias

  // forward() and backward() of this layer applied to affine(x) (channels_last.hpp) instead
  // of x, the map folded into the pass that copies x channels-last: a residual block reads
  // relu(bn1(a)) so without writing it out. dx is the gradient with respect to affine(x), the
  // layer's input. Only on the Winograd path (reads_affine_input()).
  bool reads_affine_input() const { return winograd_; }
  void forward_affine(const float* x, const ChannelAffine& affine, float* y, std::int64_t batch,
                      float* y_moments = nullptr);
  // forward() that also writes y's per-plane moments, [batch][3][out_c] (channels_last.hpp's
  // from_channels_last), for the BatchNorm after the layer, in the pass that writes y.
  // By the options, not the bound bias pointer: Model::add asks before bind() (a conv with its
  // default bias before a batchnorm was fused, then refused at its first step; 2026-11-30 audit).
  bool writes_output_moments() const { return (winograd_ || planes_) && !opt_.bias; }
  void forward_with_moments(const float* x, float* y, std::int64_t batch, float* y_moments);
  void backward_affine(const float* x, const ChannelAffine& affine, const float* dy, float* dx,
                       std::int64_t batch, bool accumulate,
                       const BatchNormGradMap* dy_map = nullptr);
  // Whether backward_adding takes a dy_map here: the Winograd path, the 1x1 stride-2 one, and
  // the direct path at stride 1 with the weight gradient over padded planes (the input gradient
  // over them too, or none: the first layer's).
  bool reads_mapped_gradient(bool input_grad = true) const {
    return !opt_.bias &&
           (winograd_ || subsampled_ ||
            (planes_ && dw_lanes_ && opt_.stride == 1 && (!input_grad || in_.c % 8 == 0)));
  }

 private:
  // col: [in_c*k*k, out_h*out_w] from one image x: [in_c, in_h, in_w] (zeros in the padding);
  // rows `ld` floats apart (default out_h*out_w), so images can sit side by side.
  void im2col(const float* x, float* col, std::int64_t ld = 0) const;
  // Images per weight-gradient GEMM on the im2col path (conv2d_backward.cpp).
  std::int64_t dw_group(std::int64_t batch, int threads) const;
  // dx: [in_c, in_h, in_w] = sum of dcol's entries over the windows each pixel falls in.
  void col2im(const float* dcol, float* dx) const;
  void valid_columns(std::int64_t kj, std::int64_t& lo, std::int64_t& hi) const;
  bool pointwise() const;  // 1x1, stride 1, no padding: the image is its own column matrix
  float* workspace(int thread, std::size_t size);
  int threads_for(std::int64_t batch) const;
  conv_direct::Geometry plane_geometry() const;  // the direct path's view of the input
  void forward_planes(const float* x, float* y, std::int64_t batch, float* y_moments = nullptr);
  // The 1x1 stride-2 path (conv2d_subsampled.cpp).
  bool subsampled_pointwise() const;
  void forward_subsampled(const float* x, float* y, std::int64_t batch);
  // add_to_dx: dx += the input gradient (backward_adding with dx as its own addend).
  void backward_subsampled(const float* x, const float* dy, float* dx, std::int64_t batch,
                           bool accumulate, bool add_to_dx = false,
                           const BatchNormGradMap* dy_map = nullptr);
  // dW, db (+)= the threads' partials in dw_part_ (entries from `begin` of [dW, db]).
  void add_up_partials(int threads, std::size_t begin, bool accumulate);
  // The Winograd path (conv2d_winograd.cpp).
  winograd::Shape winograd_shape() const;
  void forward_winograd(const float* x, float* y, std::int64_t batch,
                        const ChannelAffine* x_affine = nullptr, float* y_moments = nullptr);
  void backward_winograd(const float* x, const float* dy, float* dx, std::int64_t batch,
                         bool accumulate, const float* dx_addend = nullptr,
                         const ChannelAffine* x_affine = nullptr,
                         const BatchNormGradMap* dy_map = nullptr);
  // db_t[o] (+)= sum of dy_n's channel o: one image's bias gradient.
  void add_bias_grad(const float* dyn, bool first, float* db_t) const;
  // backward() on the direct and im2col paths; dy_map as in backward_adding.
  void backward_direct_or_im2col(const float* x, const float* dy, float* dx, std::int64_t batch,
                                 bool accumulate, const BatchNormGradMap* dy_map);
  // Sizes the per-thread workspaces one backward call needs (conv2d_backward.cpp).
  void reserve_backward(int threads, bool dx_direct, bool need_col, bool dx, std::int64_t group);

  Shape3 in_, out_;
  Conv2dOptions opt_;
  InitScheme init_;
  std::int64_t rows_ = 0;  // in_c * k * k
  std::size_t w_segment_ = 0, b_segment_ = 0;
  float *w_ = nullptr, *b_ = nullptr, *dw_ = nullptr, *db_ = nullptr;
  std::vector<AlignedBuffer> col_, dcol_, dw_part_;  // per thread (im2col path)
  std::vector<AlignedBuffer> dy_group_;              // per thread: a group's dy side by side
  AlignedBuffer dx_scratch_;  // backward_adding's input gradient on the other paths
  // Direct path: weights rearranged each step; per thread padded input, output and dy planes
  // and weight-gradient lanes (16 floats per weight). The weight gradient goes through the lanes
  // only for 3x3 kernels with outputs of at least 16x16 and at most 16K weights (lanes within a
  // 1 MiB L2): on smaller planes, for 5x5 and for larger layers im2col + GEMM measured faster.
  bool planes_ = false, dw_lanes_ = false, subsampled_ = false;
  AlignedBuffer w_forward_, w_input_grad_;
  struct PlaneWorkspace {
    AlignedBuffer x, out, dy, lanes;
  };
  std::vector<PlaneWorkspace> plane_ws_;
  // Winograd path: transformed weights (forward, input gradient) and per thread scratch and
  // transformed weight-gradient partials.
  bool winograd_ = false;
  AlignedBuffer w_winograd_, w_winograd_dx_;
  std::vector<winograd::Workspace> winograd_ws_;
  std::vector<AlignedBuffer> dw_winograd_;
  std::unique_ptr<OnednnConv> onednn_;  // the oneDNN path, where the constructor chose it
};

}  // namespace lbt::nn
