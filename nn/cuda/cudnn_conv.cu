// CudnnConv2d: cuDNN's convolution (the legacy descriptor API of cuDNN 9) with fixed,
// deterministic algorithms: implicit GEMM forward, algorithm 1 for both backward passes.
#include <cudnn.h>

#include <algorithm>

#include "core/cuda/check.cuh"
#include "nn/cuda/cudnn_conv.hpp"

namespace lbt::nn::cuda {

using lbt::cuda::check;

struct CudnnConv2d::Descriptors {
  cudnnHandle_t handle = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  lbt::cuda::DeviceArray<float> workspace;
};

namespace {

constexpr auto kForward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
constexpr auto kBackwardData = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
constexpr auto kBackwardFilter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;

void set_nchw(cudnnTensorDescriptor_t d, std::int64_t n, Shape3 s) {
  check(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, static_cast<int>(n),
                                   static_cast<int>(s.c), static_cast<int>(s.h),
                                   static_cast<int>(s.w)),
        "cudnnSetTensor4dDescriptor");
}

}  // namespace

CudnnConv2d::CudnnConv2d(Shape3 in, const Conv2dOptions& o, std::int64_t batch)
    : d_(std::make_unique<Descriptors>()), in_(in) {
  Descriptors& d = *d_;
  check(cudnnCreate(&d.handle), "cudnnCreate");
  check(cudnnCreateTensorDescriptor(&d.x), "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&d.y), "cudnnCreateTensorDescriptor");
  check(cudnnCreateTensorDescriptor(&d.bias), "cudnnCreateTensorDescriptor");
  check(cudnnCreateFilterDescriptor(&d.w), "cudnnCreateFilterDescriptor");
  check(cudnnCreateConvolutionDescriptor(&d.conv), "cudnnCreateConvolutionDescriptor");
  const int k = static_cast<int>(o.kernel), p = static_cast<int>(o.padding),
            s = static_cast<int>(o.stride);
  check(cudnnSetFilter4dDescriptor(d.w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW,
                                   static_cast<int>(o.out_channels), static_cast<int>(in.c), k, k),
        "cudnnSetFilter4dDescriptor");
  // Cross-correlation, as PyTorch and the CPU's Conv2d compute it; fp32 FMA math, no TF32.
  check(cudnnSetConvolution2dDescriptor(d.conv, p, p, s, s, 1, 1, CUDNN_CROSS_CORRELATION,
                                        CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor");
  check(cudnnSetConvolutionMathType(d.conv, CUDNN_FMA_MATH), "cudnnSetConvolutionMathType");
  set_nchw(d.x, batch, in);
  int n = 0, c = 0, h = 0, w = 0;
  check(cudnnGetConvolution2dForwardOutputDim(d.conv, d.x, d.w, &n, &c, &h, &w),
        "cudnnGetConvolution2dForwardOutputDim");
  out_ = {c, h, w};
  set_nchw(d.y, batch, out_);
  set_nchw(d.bias, 1, {c, 1, 1});
  std::size_t fwd = 0, bwd_data = 0, bwd_filter = 0;
  check(cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, kForward, &fwd),
        "cudnnGetConvolutionForwardWorkspaceSize");
  check(cudnnGetConvolutionBackwardDataWorkspaceSize(d.handle, d.w, d.y, d.conv, d.x, kBackwardData,
                                                     &bwd_data),
        "cudnnGetConvolutionBackwardDataWorkspaceSize");
  check(cudnnGetConvolutionBackwardFilterWorkspaceSize(d.handle, d.x, d.y, d.conv, d.w,
                                                       kBackwardFilter, &bwd_filter),
        "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  d.workspace = lbt::cuda::DeviceArray<float>((std::max({fwd, bwd_data, bwd_filter}) + 3) / 4);
}

CudnnConv2d::~CudnnConv2d() {
  Descriptors& d = *d_;
  cudnnDestroyConvolutionDescriptor(d.conv);
  cudnnDestroyFilterDescriptor(d.w);
  cudnnDestroyTensorDescriptor(d.bias);
  cudnnDestroyTensorDescriptor(d.y);
  cudnnDestroyTensorDescriptor(d.x);
  cudnnDestroy(d.handle);
}

void CudnnConv2d::forward(const float* x, const float* w, const float* b, float* y) {
  Descriptors& d = *d_;
  const float one = 1.0f, zero = 0.0f;
  check(cudnnConvolutionForward(d.handle, &one, d.x, x, d.w, w, d.conv, kForward,
                                d.workspace.data(), d.workspace.size() * 4, &zero, d.y, y),
        "cudnnConvolutionForward");
  if (b) check(cudnnAddTensor(d.handle, &one, d.bias, b, &one, d.y, y), "cudnnAddTensor");
}

void CudnnConv2d::backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                           float* db, bool accumulate) {
  Descriptors& d = *d_;
  const float one = 1.0f, zero = 0.0f;
  const float* beta = accumulate ? &one : &zero;
  check(cudnnConvolutionBackwardFilter(d.handle, &one, d.x, x, d.y, dy, d.conv, kBackwardFilter,
                                       d.workspace.data(), d.workspace.size() * 4, beta, d.w, dw),
        "cudnnConvolutionBackwardFilter");
  if (db)
    check(cudnnConvolutionBackwardBias(d.handle, &one, d.y, dy, beta, d.bias, db),
          "cudnnConvolutionBackwardBias");
  if (dx)
    check(cudnnConvolutionBackwardData(d.handle, &one, d.w, w, d.y, dy, d.conv, kBackwardData,
                                       d.workspace.data(), d.workspace.size() * 4, &zero, d.x, dx),
          "cudnnConvolutionBackwardData");
}

}  // namespace lbt::nn::cuda
