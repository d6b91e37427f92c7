// The parts of CudnnConv2d (cudnn_conv.hpp) that its two files share: cudnn_conv.cu makes the
// descriptors and runs the passes, cudnn_choice.cu chooses the algorithms. Not for other users.
#pragma once
#include <cudnn.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/cuda/gpu.hpp"
#include "nn/cuda/cudnn_conv.hpp"

namespace lbt::nn::cuda {

struct Algorithms {
  cudnnConvolutionFwdAlgo_t forward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t backward_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_1;
  cudnnConvolutionBwdFilterAlgo_t backward_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1;
  bool operator==(const Algorithms&) const = default;
};

struct CudnnConv2d::Descriptors {
  cudnnHandle_t handle = nullptr;  // the process's (process_handle)
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  Algorithms algorithms;
  std::string ranking;             // cuDNN's rankings they were chosen from ("" for the fixed ones)
  std::size_t workspace_size = 0;  // bytes its passes need (shared_workspace)
  // The bias gradient's per-block sums (channel_sums).
  lbt::cuda::DeviceArray<double> bias_partials;
  std::int64_t batch = 0;
  std::size_t x_size = 0, w_size = 0, y_size = 0;  // elements at this batch size
};

namespace cudnn_parts {

using Descriptors = CudnnConv2d::Descriptors;

// The process's one workspace for every convolution's passes, grown (never shrunk) to `bytes`
// where it is smaller. The passes run on the default stream one at a time, so they can share it;
// before 2026-11-28 each convolution (per layer and batch size: a ResNet's dozens) held its own,
// which workspace_cap's 1 GiB would have multiplied.
struct Workspace {
  void* data;
  std::size_t bytes;
};
Workspace shared_workspace(std::size_t bytes);

// The workspace (bytes) the three passes need with algorithms `a`.
std::size_t workspace_bytes(const Descriptors& d, const Algorithms& a);

// y = W * x; dw = dy * x + beta * dw; dx = W^T * dy (device pointers, d's shapes).
void forward_pass(Descriptors& d, const Algorithms& a, const float* x, const float* w, float* y);
void filter_pass(Descriptors& d, const Algorithms& a, const float* x, const float* dy, float beta,
                 float* dw);
void data_pass(Descriptors& d, const Algorithms& a, const float* w, const float* dy, float* dx);

// Sets d.algorithms, d.ranking and d.workspace_size as LBT_CUDNN_ALGOS asks (cudnn_choice.cu);
// `convolution` describes the shapes, for the cache of choices.
void choose_algorithms(Descriptors& d, const std::string& convolution);

}  // namespace cudnn_parts
}  // namespace lbt::nn::cuda
