// A 2-D convolution over NCHW images on the GPU through cuDNN: y = W * x + b, W [out_c, in_c,
// k, k] as the CPU's Conv2d (nn/cpu/conv2d.hpp), with the gradients of x, W and b. fp32 math
// without TF32 (CUDNN_FMA_MATH), fixed deterministic algorithms or (LBT_CUDNN_ALGOS=chosen,
// measured, nondeterministic) those cuDNN ranks first per shape, vetted and cached on disk
// (cudnn_choice.cu).
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "core/cuda/gpu.hpp"
#include "nn/layer_options.hpp"
#include "nn/shape.hpp"

namespace lbt::nn::cuda {

class CudnnConv2d {
 public:
  CudnnConv2d(Shape3 in, const Conv2dOptions& options, std::int64_t batch);
  ~CudnnConv2d();
  Shape3 out_shape() const { return out_; }
  // The cuDNN algorithm numbers chosen (cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t), for
  // reports: "fwd 1, bwd data 1, bwd filter 1".
  std::string algorithms() const;
  // cuDNN's rankings the algorithms were chosen from, per pass, each algorithm with its time
  // (LBT_CUDNN_ALGOS=measured), workspace and what excluded it; "" with the fixed ones.
  std::string ranking() const;
  // Device pointers; b may be null (no bias).
  void forward(const float* x, const float* w, const float* b, float* y);
  // dx = W^T * dy (skipped when dx is null), dw = dy * x, db = sum of dy over batch and plane;
  // dw and db added to when `accumulate` (micro-batches).
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                bool accumulate = false);

  struct Descriptors;  // cuDNN's handle and descriptors (cudnn_conv.cu)

 private:
  std::unique_ptr<Descriptors> d_;
  Shape3 in_, out_;
};

// One layer's convolutions: cuDNN's descriptors and algorithms are per batch size, made at the
// first use of each.
class CudnnConvByBatch {
 public:
  CudnnConvByBatch(Shape3 in, const Conv2dOptions& options) : in_(in), options_(options) {}
  CudnnConv2d& at(std::int64_t batch) {
    std::unique_ptr<CudnnConv2d>& conv = convs_[batch];
    if (!conv) conv = std::make_unique<CudnnConv2d>(in_, options_, batch);
    return *conv;
  }

 private:
  Shape3 in_;
  Conv2dOptions options_;
  std::map<std::int64_t, std::unique_ptr<CudnnConv2d>> convs_;
};

}  // namespace lbt::nn::cuda
