// Conv2d's paths side by side: a layer with its own parameters, an element-wise comparison
// scaled to the largest expected value, and a whole path against im2col + GEMM
// (test_conv_direct.cpp, test_winograd.cpp).
#pragma once
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "nn/cpu/conv2d.hpp"
#include "support/random.hpp"

namespace lbt::test {

struct BuiltConv {
  ParameterStore store;
  std::unique_ptr<nn::Conv2d> conv;
};

inline void build(BuiltConv& b, nn::Shape3 in, nn::Conv2dOptions opt) {
  b.conv = std::make_unique<nn::Conv2d>(in, opt, nn::InitScheme::kHe);
  b.conv->register_params(b.store, "c");
  b.store.allocate();
  b.conv->bind(b.store);
}

// |got - want| <= abs_tol * max|want| + rel_tol * |want| everywhere; names the first misses.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want,
                         const char* what, float abs_tol = 1e-5f, float rel_tol = 1e-4f) {
  float scale = 0.0f;
  for (float v : want) scale = std::max(scale, std::abs(v));
  std::size_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::abs(got[i] - want[i]) > abs_tol * scale + rel_tol * std::abs(want[i]) && ++bad <= 3)
      BOOST_ERROR(what << "[" << i << "]: " << got[i] << " vs reference " << want[i]);
  }
  BOOST_TEST(bad == 0u, bad << " of " << want.size() << " " << what << " differ");
}

// One forward and backward of `batch` images x with output gradients dy; with `accumulate`,
// the parameter gradients add to those the previous pass left.
struct ConvPass {
  std::vector<float> y, dx, grads;
};
inline ConvPass run_pass(BuiltConv& b, const std::vector<float>& x, const std::vector<float>& dy,
                         std::int64_t batch, bool accumulate) {
  ConvPass r{std::vector<float>(dy.size()), std::vector<float>(x.size()), {}};
  b.conv->forward(x.data(), r.y.data(), batch, true);
  b.conv->backward(x.data(), r.y.data(), dy.data(), r.dx.data(), batch, accumulate);
  r.grads.assign(b.store.grads().begin(), b.store.grads().end());
  return r;
}

// The layer `opt` builds against the same layer forced onto im2col + GEMM (allow_direct =
// false), both with the same seeded parameters, inputs and output gradients: outputs, input
// gradients and parameter gradients, overwritten and then accumulated.
inline void expect_equals_im2col(nn::Shape3 in, nn::Conv2dOptions opt, std::int64_t batch,
                                 float abs_tol = 1e-5f, float rel_tol = 1e-4f) {
  BuiltConv path, gemm;
  build(path, in, opt);
  opt.allow_direct = false;
  build(gemm, in, opt);
  const auto params = normal_vector(path.store.num_params(), 7, 0.2f);
  std::copy(params.begin(), params.end(), path.store.params().begin());
  std::copy(params.begin(), params.end(), gemm.store.params().begin());
  const auto x = normal_vector(static_cast<std::size_t>(batch * in.size()), 8);
  const auto dy = normal_vector(static_cast<std::size_t>(batch * path.conv->out_features()), 9);
  for (bool accumulate : {false, true}) {
    const auto got = run_pass(path, x, dy, batch, accumulate);
    const auto want = run_pass(gemm, x, dy, batch, accumulate);
    expect_close(got.y, want.y, "y", abs_tol, rel_tol);
    expect_close(got.dx, want.dx, "dx", abs_tol, rel_tol);
    expect_close(got.grads, want.grads, accumulate ? "accumulated grads" : "grads", abs_tol,
                 rel_tol);
  }
}

}  // namespace lbt::test
