// Conv2d's Winograd path (winograd.hpp) against two independent references: a convolution
// written out in double precision over every window (outputs, input gradients, weight and bias
// gradients), and the im2col + GEMM path (itself checked against finite differences in
// test_cnn.cpp) on the layers of ResNet-8/20 and the simple CNN, with image groups, a short
// last group, non-square images, partial tiles and gradient accumulation. Winograd's
// transforms multiply values by up to 25 (F(4x4, 5x5): 21/4 squared) before dividing again,
// so outputs carry float rounding of about 1e-6 of the largest value; the tolerances allow
// 3e-5.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "nn/cpu/batch_norm.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/cpu/winograd.hpp"
#include "support/conv_paths.hpp"
#include "support/cpu_paths.hpp"
#include "support/random.hpp"

using namespace lbt;
using lbt::test::BuiltConv;
using lbt::test::expect_close;
using lbt::test::normal_vector;

namespace {

constexpr float kAbsTol = 3e-5f, kRelTol = 1e-4f;

nn::Conv2dOptions same_conv(std::int64_t out, std::int64_t kernel, bool bias) {
  return {.out_channels = out, .kernel = kernel, .stride = 1, .padding = kernel / 2, .bias = bias};
}

}  // namespace

namespace {

// One layer's forward and backward, on the Winograd path or (winograd false) the direct one,
// against the convolution written out in double.
void expect_written_out_convolution(bool winograd) {
  const std::int64_t out_c = 32, batch = 2;
  // 4 x 6 and 7 x 5 images: whole and partial 4x4 output tiles.
  for (const auto& [in, k] :
       {std::pair{nn::Shape3{16, 4, 6}, 3}, std::pair{nn::Shape3{16, 4, 6}, 5},
        std::pair{nn::Shape3{16, 7, 5}, 3}, std::pair{nn::Shape3{16, 7, 5}, 5}}) {
    BOOST_TEST_CONTEXT("in " << in.text() << ", kernel " << k) {
      BuiltConv b;
      nn::Conv2dOptions opt = same_conv(out_c, k, true);
      opt.allow_winograd = winograd;
      lbt::test::build(b, in, opt);
      const auto params = normal_vector(b.store.num_params(), 3, 0.3f);
      std::copy(params.begin(), params.end(), b.store.params().begin());
      const auto x = normal_vector(static_cast<std::size_t>(batch * in.size()), 4);
      const auto dy = normal_vector(static_cast<std::size_t>(batch * out_c * in.h * in.w), 5);
      const auto got = lbt::test::run_pass(b, x, dy, batch, false);
      // y[n][o][i][j] = b[o] + sum_{c,u,v} W[o][c][u][v] x[n][c][i+u-p][j+v-p]; dx and dW by
      // the same windows, read the other way.
      const std::int64_t p = k / 2, H = in.h, W = in.w, C = in.c;
      const float* w = b.store.params().data();
      const float* bias = w + out_c * C * k * k;
      std::vector<double> y(dy.size()), dx(x.size()),
          dw(static_cast<std::size_t>(out_c * C * k * k)), db(static_cast<std::size_t>(out_c));
      for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t o = 0; o < out_c; ++o)
          for (std::int64_t i = 0; i < H; ++i)
            for (std::int64_t j = 0; j < W; ++j) {
              const std::size_t yi = static_cast<std::size_t>(((n * out_c + o) * H + i) * W + j);
              double sum = bias[o];
              db[static_cast<std::size_t>(o)] += dy[yi];
              for (std::int64_t c = 0; c < C; ++c)
                for (std::int64_t u = 0; u < k; ++u)
                  for (std::int64_t v = 0; v < k; ++v) {
                    const std::int64_t r = i + u - p, s = j + v - p;
                    if (r < 0 || r >= H || s < 0 || s >= W) continue;
                    const std::size_t xi = static_cast<std::size_t>(((n * C + c) * H + r) * W + s);
                    const std::size_t wi = static_cast<std::size_t>(((o * C + c) * k + u) * k + v);
                    sum += static_cast<double>(w[wi]) * x[xi];
                    dx[xi] += static_cast<double>(w[wi]) * dy[yi];
                    dw[wi] += static_cast<double>(x[xi]) * dy[yi];
                  }
              y[yi] = sum;
            }
      std::vector<float> grads(dw.begin(), dw.end());
      grads.insert(grads.end(), db.begin(), db.end());
      expect_close(got.y, std::vector<float>(y.begin(), y.end()), "y", kAbsTol, kRelTol);
      expect_close(got.dx, std::vector<float>(dx.begin(), dx.end()), "dx", kAbsTol, kRelTol);
      expect_close(got.grads, grads, "grads", kAbsTol, kRelTol);
    }
  }
}

}  // namespace

// Both fast paths of a "same" convolution, with whole and partial 4x4 tiles, on every CPU path
// the machine has (their register tiles differ by ISA).
BOOST_AUTO_TEST_CASE(winograd_and_direct_paths_equal_a_written_out_convolution_in_double) {
  lbt::test::on_every_cpu_path([] {
    expect_written_out_convolution(true);
    expect_written_out_convolution(false);
  });
}

BOOST_AUTO_TEST_CASE(winograd_equals_im2col_and_gemm_on_resnet_and_simple_cnn_layers) {
  struct Case {
    nn::Shape3 in;
    std::int64_t out, kernel;
    bool bias;
  };
  const Case cases[] = {
      {{16, 32, 32}, 16, 3, false},  // ResNet stage 1: groups of 4 images
      {{32, 16, 16}, 32, 3, false},  // stage 2
      {{64, 8, 8}, 64, 3, true},     // stage 3: groups of 16, cut to each thread's share
      {{32, 14, 14}, 64, 5, true},   // the simple CNN's second layer
      {{16, 4, 12}, 32, 3, false},   // one row of tiles, not square
      {{48, 6, 10}, 16, 5, true},    // three input blocks, a 16-wide output, partial tiles
      {{16, 14, 14}, 32, 3, true},   // 3x3 with partial tiles
      {{32, 7, 7}, 16, 5, false},    // the simple CNN's second layer on 7x7 (partial tiles)
  };
  for (const Case& c : cases) {
    for (std::int64_t batch : {3, 21}) {
      BOOST_TEST_CONTEXT("in " << c.in.text() << " -> " << c.out << ", k" << c.kernel << ", batch "
                               << batch) {
        const auto opt = same_conv(c.out, c.kernel, c.bias);
        BOOST_TEST(nn::winograd::supports(
            static_cast<int>(c.kernel), 1, static_cast<int>(c.kernel / 2), static_cast<int>(c.in.c),
            static_cast<int>(c.out), static_cast<int>(c.in.h), static_cast<int>(c.in.w)));
        lbt::test::expect_equals_im2col(c.in, opt, batch, kAbsTol, kRelTol);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(affine_input_equals_applying_the_map_first) {
  // forward_affine / backward_affine against the same layer run on r = map(x) written out:
  // the map is applied before the transforms, so everything agrees bit for bit.
  const nn::Shape3 in{16, 7, 5};
  const std::int64_t batch = 3, out_c = 32;
  const auto x = normal_vector(static_cast<std::size_t>(batch * in.size()), 31);
  const auto dy = normal_vector(static_cast<std::size_t>(batch * out_c * in.h * in.w), 32);
  const auto scale = normal_vector(16, 33), shift = normal_vector(16, 34);
  for (bool relu : {false, true}) {
    BOOST_TEST_CONTEXT((relu ? "with" : "without") << " relu") {
      BuiltConv b;
      lbt::test::build(b, in, same_conv(out_c, 3, false));
      BOOST_REQUIRE(b.conv->reads_affine_input());
      const auto params = normal_vector(b.store.num_params(), 35, 0.3f);
      std::copy(params.begin(), params.end(), b.store.params().begin());
      std::vector<float> r(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const std::size_t c = i / static_cast<std::size_t>(in.h * in.w) % 16;
        r[i] = std::fma(x[i], scale[c], shift[c]);
        if (relu) r[i] = std::max(r[i], 0.0f);
      }
      const auto want = lbt::test::run_pass(b, r, dy, batch, false);
      const nn::ChannelAffine map{scale.data(), shift.data(), relu};
      std::vector<float> y(dy.size()), dx(x.size());
      b.conv->forward_affine(x.data(), map, y.data(), batch);
      b.conv->backward_affine(x.data(), map, dy.data(), dx.data(), batch, false);
      BOOST_TEST(y == want.y, boost::test_tools::per_element());
      BOOST_TEST(dx == want.dx, boost::test_tools::per_element());
      const std::vector<float> grads(b.store.grads().begin(), b.store.grads().end());
      BOOST_TEST(grads == want.grads, boost::test_tools::per_element());
    }
  }
}

BOOST_AUTO_TEST_CASE(gradient_read_through_a_batch_norm_map_equals_the_written_input_gradient) {
  // backward_adding with dy_map against the same layer given the BatchNorm's input gradient
  // written out by BatchNorm::backward: the map computes it with the same operations, so the
  // layer's input and weight gradients agree bit for bit. Winograd: 16x16 images of 32
  // channels make groups of 4 images, so batch 9 has three, the last short, each reading its
  // own images of z; with an addend. The direct path at stride 1 (the map in its padded dy
  // planes): ResNet's stem, whose input gradient is not needed, and a 16-channel layer with one.
  // The 1x1 stride-2 path (a projection shortcut, one image's mapped dy at a time), adding to
  // dx in place.
  enum class Addend { kNone, kApart, kInPlace };
  struct Case {
    nn::Shape3 in;
    std::int64_t out, kernel, stride;
    bool winograd, input_grad;
    Addend addend;
  };
  for (const Case& c : {Case{{16, 16, 16}, 32, 3, 1, true, true, Addend::kApart},
                        Case{{3, 16, 16}, 16, 3, 1, false, false, Addend::kNone},
                        Case{{16, 16, 16}, 16, 3, 1, false, true, Addend::kNone},
                        Case{{16, 16, 16}, 32, 1, 2, false, true, Addend::kInPlace}}) {
    const std::int64_t batch = 9;
    const nn::Shape3 out{c.out, c.in.h / c.stride, c.in.w / c.stride};
    const auto n_out = static_cast<std::size_t>(batch * out.size());
    const auto x = normal_vector(static_cast<std::size_t>(batch * c.in.size()), 41);
    const auto z = normal_vector(n_out, 42), g = normal_vector(n_out, 43);
    const auto addend = normal_vector(x.size(), 44);
    for (bool relu : {false, true}) {
      BOOST_TEST_CONTEXT(c.in.text() << " -> " << c.out << (relu ? ", with" : ", without")
                                     << " the BatchNorm's relu") {
        BuiltConv b;
        nn::Conv2dOptions opt{.out_channels = c.out,
                              .kernel = c.kernel,
                              .stride = c.stride,
                              .padding = c.kernel / 2,
                              .bias = false};
        opt.allow_winograd = c.winograd;
        lbt::test::build(b, c.in, opt);
        BOOST_REQUIRE(b.conv->reads_mapped_gradient(c.input_grad));
        const auto params = normal_vector(b.store.num_params(), 45, 0.3f);
        std::copy(params.begin(), params.end(), b.store.params().begin());
        ParameterStore bn_store;
        nn::BatchNorm bn(out, {.relu = relu});
        bn.register_params(bn_store, "bn");
        bn_store.allocate();
        bn.bind(bn_store);
        const auto affine = normal_vector(bn_store.num_params(), 46, 0.5f);
        std::copy(affine.begin(), affine.end(), bn_store.params().begin());
        std::vector<float> bn_y(n_out), dz(n_out);
        bn.forward(z.data(), bn_y.data(), batch, true);
        const bool in_place = c.addend == Addend::kInPlace;
        std::vector<float> want_dx(in_place ? addend : std::vector<float>(x.size()));
        std::vector<float> dx(want_dx);
        float* want_p = c.input_grad ? want_dx.data() : nullptr;
        float* dx_p = c.input_grad ? dx.data() : nullptr;
        const float* want_add = c.addend == Addend::kApart ? addend.data()
                                : in_place                 ? want_p
                                                           : nullptr;
        const float* add = c.addend == Addend::kApart ? addend.data() : in_place ? dx_p : nullptr;

        bn.backward(z.data(), bn_y.data(), g.data(), dz.data(), batch, false);
        b.conv->backward_adding(x.data(), dz.data(), want_p, want_add, batch, false);
        const std::vector<float> want_grads(b.store.grads().begin(), b.store.grads().end());

        bn.backward(z.data(), bn_y.data(), g.data(), nullptr, batch, false);
        const nn::BatchNormGradMap map = bn.grad_map(z.data());
        b.conv->backward_adding(x.data(), g.data(), dx_p, add, batch, false, &map);
        BOOST_TEST(dx == want_dx, boost::test_tools::per_element());
        const std::vector<float> grads(b.store.grads().begin(), b.store.grads().end());
        BOOST_TEST(grads == want_grads, boost::test_tools::per_element());
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(winograd_path_is_chosen_only_for_the_shapes_it_computes) {
  using nn::winograd::supports;
  BOOST_TEST(supports(3, 1, 1, 16, 16, 32, 32));
  BOOST_TEST(supports(3, 1, 1, 64, 32, 8, 12));
  BOOST_TEST(supports(5, 1, 2, 32, 64, 14, 14));
  BOOST_TEST(supports(3, 1, 1, 16, 16, 14, 14));  // partial tiles over zero padding
  BOOST_TEST(supports(5, 1, 2, 32, 64, 7, 7));
  BOOST_TEST(!supports(5, 1, 2, 1, 32, 28, 28));   // one input channel: the direct path
  BOOST_TEST(!supports(3, 1, 1, 16, 8, 8, 8));     // 8 output channels
  BOOST_TEST(!supports(3, 2, 1, 16, 32, 32, 32));  // stride 2
  BOOST_TEST(!supports(5, 1, 1, 16, 16, 8, 8));    // not "same"
  BOOST_TEST(!supports(7, 1, 3, 16, 16, 8, 8));
}
