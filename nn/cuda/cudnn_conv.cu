// CudnnConv2d: cuDNN's convolution (the legacy descriptor API of cuDNN 9): the descriptors, the
// three passes and the bias gradient; the algorithms are chosen in cudnn_choice.cu.
#include <cudnn.h>

#include <algorithm>
#include <string>

#include "core/cuda/check.cuh"
#include "core/error.hpp"
#include "nn/cuda/batch_norm.hpp"
#include "nn/cuda/cudnn_conv.hpp"
#include "nn/cuda/cudnn_parts.hpp"

namespace lbt::nn::cuda {

using lbt::cuda::check;
using lbt::cuda::DeviceArray;

namespace cudnn_parts {

Workspace shared_workspace(std::size_t bytes) {
  // Freed by the driver with the process, as the handle (a static's destructor could run after
  // the CUDA context is gone). cudaFree waits for the kernels that use the old one.
  static DeviceArray<float>* memory = new DeviceArray<float>();
  if (memory->size() * sizeof(float) < bytes) {
    *memory = DeviceArray<float>();  // free first: the old and new need not fit together
    *memory = DeviceArray<float>((bytes + sizeof(float) - 1) / sizeof(float));
  }
  return {memory->data(), memory->size() * sizeof(float)};
}

std::size_t workspace_bytes(const Descriptors& d, const Algorithms& a) {
  std::size_t fwd = 0, bwd_data = 0, bwd_filter = 0;
  check(cudnnGetConvolutionForwardWorkspaceSize(d.handle, d.x, d.w, d.conv, d.y, a.forward, &fwd),
        "cudnnGetConvolutionForwardWorkspaceSize");
  check(cudnnGetConvolutionBackwardDataWorkspaceSize(d.handle, d.w, d.y, d.conv, d.x,
                                                     a.backward_data, &bwd_data),
        "cudnnGetConvolutionBackwardDataWorkspaceSize");
  check(cudnnGetConvolutionBackwardFilterWorkspaceSize(d.handle, d.x, d.y, d.conv, d.w,
                                                       a.backward_filter, &bwd_filter),
        "cudnnGetConvolutionBackwardFilterWorkspaceSize");
  return std::max({fwd, bwd_data, bwd_filter});
}

void forward_pass(Descriptors& d, const Algorithms& a, const float* x, const float* w, float* y) {
  const float one = 1.0f, zero = 0.0f;
  const Workspace ws = shared_workspace(d.workspace_size);
  check(cudnnConvolutionForward(d.handle, &one, d.x, x, d.w, w, d.conv, a.forward, ws.data,
                                ws.bytes, &zero, d.y, y),
        "cudnnConvolutionForward");
}

void filter_pass(Descriptors& d, const Algorithms& a, const float* x, const float* dy, float beta,
                 float* dw) {
  const float one = 1.0f;
  const Workspace ws = shared_workspace(d.workspace_size);
  check(cudnnConvolutionBackwardFilter(d.handle, &one, d.x, x, d.y, dy, d.conv, a.backward_filter,
                                       ws.data, ws.bytes, &beta, d.w, dw),
        "cudnnConvolutionBackwardFilter");
}

void data_pass(Descriptors& d, const Algorithms& a, const float* w, const float* dy, float* dx) {
  const float one = 1.0f, zero = 0.0f;
  const Workspace ws = shared_workspace(d.workspace_size);
  check(cudnnConvolutionBackwardData(d.handle, &one, d.w, w, d.y, dy, d.conv, a.backward_data,
                                     ws.data, ws.bytes, &zero, d.x, dx),
        "cudnnConvolutionBackwardData");
}

}  // namespace cudnn_parts

namespace {

using namespace cudnn_parts;

// One cuDNN handle for the process, made at its first convolution: cudnnCreate loads cuDNN's
// kernels and takes device memory, and before 2026-11-27 every convolution (per layer and batch
// size: a ResNet-20's 19 at two or three batch sizes) made its own. A process uses one device
// and the default stream. Never destroyed: the driver frees it with the process (a static's
// destructor could run after the CUDA context is gone).
cudnnHandle_t process_handle() {
  static const cudnnHandle_t handle = [] {
    cudnnHandle_t h = nullptr;
    check(cudnnCreate(&h), "cudnnCreate");
    return h;
  }();
  return handle;
}

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
  d.handle = process_handle();
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
  d.x_size = static_cast<std::size_t>(batch * in.size());
  d.w_size = static_cast<std::size_t>(o.out_channels * in.c * o.kernel * o.kernel);
  d.y_size = static_cast<std::size_t>(batch * out_.size());
  d.batch = batch;
  d.bias_partials = DeviceArray<double>(channel_sum_partials(batch, c));
  choose_algorithms(d, "NCHW " + std::to_string(batch) + "x" + std::to_string(in.c) + "x" +
                           std::to_string(in.h) + "x" + std::to_string(in.w) + ", " +
                           std::to_string(o.out_channels) + " filters " + std::to_string(k) + "x" +
                           std::to_string(k) + ", padding " + std::to_string(p) + ", stride " +
                           std::to_string(s));
}

CudnnConv2d::~CudnnConv2d() {
  Descriptors& d = *d_;
  cudnnDestroyConvolutionDescriptor(d.conv);
  cudnnDestroyFilterDescriptor(d.w);
  cudnnDestroyTensorDescriptor(d.bias);
  cudnnDestroyTensorDescriptor(d.y);
  cudnnDestroyTensorDescriptor(d.x);
}

void CudnnConv2d::forward(const float* x, const float* w, const float* b, float* y) {
  Descriptors& d = *d_;
  forward_pass(d, d.algorithms, x, w, y);
  const float one = 1.0f;
  if (b) check(cudnnAddTensor(d.handle, &one, d.bias, b, &one, d.y, y), "cudnnAddTensor");
}

void CudnnConv2d::backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                           float* db, bool accumulate) {
  Descriptors& d = *d_;
  const float beta = accumulate ? 1.0f : 0.0f;
  filter_pass(d, d.algorithms, x, dy, beta, dw);
  if (db) channel_sums(dy, d.batch, out_.c, out_.plane(), d.bias_partials.data(), db, accumulate);
  if (dx) data_pass(d, d.algorithms, w, dy, dx);
}

std::string CudnnConv2d::ranking() const {
  return d_->ranking;
}

std::string CudnnConv2d::algorithms() const {
  const Algorithms& a = d_->algorithms;
  return "fwd " + std::to_string(a.forward) + ", bwd data " + std::to_string(a.backward_data) +
         ", bwd filter " + std::to_string(a.backward_filter);
}

}  // namespace lbt::nn::cuda
