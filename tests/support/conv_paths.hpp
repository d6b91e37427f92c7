// Conv2d's paths side by side: a layer with its own parameters, and an element-wise comparison
// scaled to the largest expected value (test_conv_direct.cpp, test_winograd.cpp).
#pragma once
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "trainer/nn/conv2d.hpp"

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

}  // namespace lbt::test
