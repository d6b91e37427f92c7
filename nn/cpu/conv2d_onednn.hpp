// oneDNN's convolution primitives for one Conv2d geometry without bias, on lbt's NCHW tensors and
// OIHW weights: each tensor reordered into the layout oneDNN chose, its primitive, the results
// reordered back. Conv2d routes its 3x3 stride-2 convolutions here on the AVX2 path, the one
// place oneDNN's kernels beat lbt's hand kernels there (1.18-1.36x a layer's training pass,
// reorders included: bench/cpu_paths.md). Only in builds with oneDNN (LBT_HAVE_DNNL).
#pragma once
#include <cstdint>
#include <map>
#include <memory>

#include "core/tensor.hpp"
#include "nn/shape.hpp"

namespace lbt::nn {

class OnednnConv {
 public:
  // Whether this build has oneDNN; LBT_CONV=lbt turns the route off (benchmarks on vs off).
  static bool available();
  // Whether Conv2d hands its 3x3 stride-2 convolutions without bias here in this process: on
  // the AVX2 path, where oneDNN's kernels beat lbt's (on AVX-512 they measured a tie or less).
  static bool takes_strided_3x3();

  OnednnConv(Shape3 in, Shape3 out, std::int64_t kernel, std::int64_t stride, std::int64_t padding);
  ~OnednnConv();
  OnednnConv(const OnednnConv&) = delete;
  OnednnConv& operator=(const OnednnConv&) = delete;

  // y = W * x over `batch` images.
  void forward(const float* x, const float* w, float* y, std::int64_t batch);
  // dw (+)= the weight gradient; dx = the input gradient where dx is not null. x is the input
  // of the last forward, unchanged since (a training step): its reordered copy is reused when x
  // is the same buffer at the same batch size.
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                std::int64_t batch, bool accumulate);
  // The reordered copies and the weight-gradient scratch one batch size holds.
  std::int64_t workspace_bytes(std::int64_t batch) const;

 private:
  struct Primitives;  // one batch size's (conv2d_onednn.cpp)
  Primitives& at(std::int64_t batch);

  Shape3 in_, out_;
  std::int64_t kernel_, stride_, padding_;
  std::map<std::int64_t, std::unique_ptr<Primitives>> by_batch_;
  AlignedBuffer dw_scratch_;
  // The x (and batch size) whose reordered copy the last forward left.
  const float* forward_x_ = nullptr;
  std::int64_t forward_batch_ = 0;
};

}  // namespace lbt::nn
