// Conv2d's two paths, one truth: the direct kernel over padded planes (conv_direct.hpp) and
// im2col + GEMM give the same outputs, input gradients and parameter gradients on shapes that
// cover both kernel sizes, stride 2, several 8-channel blocks, odd image sizes, images smaller than
// the window, an odd batch (threads get unequal shares) and gradient accumulation. The im2col path
// is itself checked against finite differences and a written-out convolution (test_cnn.cpp).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/cpu_path.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/cpu/conv_direct.hpp"
#include "support/conv_paths.hpp"
#include "support/random.hpp"

using namespace lbt;
using lbt::test::normal_vector;

using Built = lbt::test::BuiltConv;
using lbt::test::build;
using lbt::test::expect_close;

BOOST_AUTO_TEST_CASE(direct_convolution_equals_im2col_and_gemm) {
  struct Case {
    nn::Shape3 in;
    std::int64_t out, kernel, stride;
    bool bias;
  };
  const Case cases[] = {
      {{16, 32, 32}, 16, 3, 1, false},
      {{16, 8, 8}, 32, 3, 1, true},
      {{32, 14, 14}, 64, 5, 1, true},
      {{1, 28, 28}, 32, 5, 1, true},
      {{8, 3, 5}, 8, 5, 1, false},
      {{3, 9, 13}, 8, 3, 1, true},
      // stride 2: outputs of 16x16 (weight gradient through the lanes), 8x8 (rows of 8 pixel
      // pairs, ResNet's last stage) and 3x2 (through GEMM)
      {{16, 32, 32}, 32, 3, 2, false},
      {{32, 16, 16}, 64, 3, 2, false},
      {{8, 6, 4}, 16, 3, 2, true},
  };
  const std::int64_t batch = 3;
  for (const Case& c : cases) {
    const nn::Conv2dOptions opt{.out_channels = c.out,
                                .kernel = c.kernel,
                                .stride = c.stride,
                                .padding = c.kernel / 2,
                                .bias = c.bias,
                                .allow_winograd = false,
                                .allow_library = false};
    BOOST_TEST_CONTEXT("in " << c.in.text() << " -> " << c.out << ", k" << c.kernel << " s"
                             << c.stride) {
      BOOST_TEST(nn::conv_direct::supports(static_cast<int>(c.kernel), static_cast<int>(c.stride),
                                           static_cast<int>(c.kernel / 2), static_cast<int>(c.out),
                                           static_cast<int>(c.in.h), static_cast<int>(c.in.w)));
      lbt::test::expect_equals_im2col(c.in, opt, batch);
    }
  }
}

BOOST_AUTO_TEST_CASE(subsampled_pointwise_convolution_equals_im2col_and_gemm) {
  // ResNet's projections (1x1, stride 2) at their CIFAR shapes, an 8x8 input (output rows of
  // 4, shorter than a vector) with a bias, and two batch sizes (odd: uneven thread shares).
  struct Case {
    nn::Shape3 in;
    std::int64_t out;
    bool bias;
  };
  const Case cases[] = {
      {{16, 32, 32}, 32, false}, {{32, 16, 16}, 64, false}, {{16, 8, 8}, 32, true}};
  for (const Case& c : cases) {
    for (std::int64_t batch : {1, 5}) {
      BOOST_TEST_CONTEXT("in " << c.in.text() << " -> " << c.out << ", batch " << batch) {
        lbt::test::expect_equals_im2col(
            c.in, {.out_channels = c.out, .kernel = 1, .stride = 2, .padding = 0, .bias = c.bias},
            batch);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(backward_adding_adds_to_the_input_gradient_on_every_path) {
  // Winograd, 1x1 stride 2, direct stride 2, im2col (5 output channels): dx = backward()'s dx
  // + the addend, given apart or in dx itself, and the same parameter gradients.
  struct Case {
    nn::Shape3 in;
    std::int64_t out, kernel, stride;
  };
  const Case cases[] = {
      {{16, 8, 8}, 16, 3, 1}, {{16, 8, 8}, 32, 1, 2}, {{16, 8, 8}, 32, 3, 2}, {{3, 6, 6}, 5, 3, 1}};
  const std::int64_t batch = 3;
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT("in " << c.in.text() << " -> " << c.out << ", k" << c.kernel << " s"
                             << c.stride) {
      lbt::test::BuiltConv b;
      lbt::test::build(b, c.in,
                       {.out_channels = c.out,
                        .kernel = c.kernel,
                        .stride = c.stride,
                        .padding = c.kernel / 2,
                        .bias = true});
      const auto x = normal_vector(static_cast<std::size_t>(batch * c.in.size()), 1);
      const auto dy = normal_vector(static_cast<std::size_t>(batch * b.conv->out_features()), 2);
      const auto addend = normal_vector(x.size(), 3);
      std::vector<float> y(dy.size()), dx(x.size()), apart(x.size()), in_place = addend;
      b.conv->forward(x.data(), y.data(), batch, true);
      b.conv->backward(x.data(), y.data(), dy.data(), dx.data(), batch, false);
      const std::vector<float> grads(b.store.grads().begin(), b.store.grads().end());
      b.conv->backward_adding(x.data(), dy.data(), apart.data(), addend.data(), batch, false);
      expect_close(std::vector<float>(b.store.grads().begin(), b.store.grads().end()), grads,
                   "grads");
      b.conv->backward_adding(x.data(), dy.data(), in_place.data(), in_place.data(), batch, false);
      std::vector<float> want(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) want[i] = dx[i] + addend[i];
      expect_close(apart, want, "dx + addend");
      expect_close(in_place, want, "dx += in place");
    }
  }
}

BOOST_AUTO_TEST_CASE(output_moments_are_each_planes_sums_about_its_first_value) {
  // forward_with_moments on the direct path (stride 1 and 2, 16- and 8-wide rows) and the
  // Winograd one: y as forward() writes it, and per image and channel the plane's first value
  // and the sums of y - it and of its square, against double precision.
  struct Case {
    nn::Shape3 in;
    std::int64_t out, stride;
  };
  for (const Case& c : {Case{{3, 16, 16}, 16, 1}, Case{{16, 32, 32}, 32, 2},
                        Case{{32, 16, 16}, 64, 2}, Case{{16, 12, 12}, 32, 1}}) {
    BOOST_TEST_CONTEXT(c.in.text() << " -> " << c.out << ", stride " << c.stride) {
      Built b;
      build(b, c.in,
            {.out_channels = c.out,
             .kernel = 3,
             .stride = c.stride,
             .padding = 1,
             .bias = false,
             .allow_library = false});
      BOOST_REQUIRE(b.conv->writes_output_moments());
      const auto params = normal_vector(b.store.num_params(), 60, 0.3f);
      std::copy(params.begin(), params.end(), b.store.params().begin());
      const std::int64_t batch = 3, C = c.out, hw = b.conv->out_shape().plane();
      const auto x = normal_vector(static_cast<std::size_t>(batch * c.in.size()), 61);
      std::vector<float> want(static_cast<std::size_t>(batch * C * hw)), y(want.size());
      std::vector<float> moments(static_cast<std::size_t>(batch * 3 * C));
      b.conv->forward(x.data(), want.data(), batch, true);
      b.conv->forward_with_moments(x.data(), y.data(), batch, moments.data());
      BOOST_TEST(y == want, boost::test_tools::per_element());
      for (std::int64_t n = 0; n < batch; ++n)
        for (std::int64_t o = 0; o < C; ++o) {
          const float* plane = want.data() + (n * C + o) * hw;
          const float* m = moments.data() + n * 3 * C + o;
          double sum = 0.0, sq = 0.0;
          for (std::int64_t i = 0; i < hw; ++i) {
            const double d = static_cast<double>(plane[i]) - plane[0];
            sum += d, sq += d * d;
          }
          BOOST_TEST(plane[0] != 0.0f);
          BOOST_TEST(m[0] == plane[0]);
          BOOST_TEST(std::abs(m[C] - sum) <= 1e-4 * (1.0 + std::sqrt(sq * hw)));
          BOOST_TEST(std::abs(m[2 * C] - sq) <= 1e-5 * sq);
        }
    }
  }
}

BOOST_AUTO_TEST_CASE(direct_path_is_chosen_only_for_the_shapes_it_computes) {
  using nn::conv_direct::supports;
  BOOST_TEST(supports(3, 1, 1, 16, 7, 5));
  BOOST_TEST(supports(5, 1, 2, 64, 14, 14));
  BOOST_TEST(supports(3, 2, 1, 32, 32, 32));   // ResNet's downsampling convolution
  BOOST_TEST(!supports(3, 2, 1, 32, 31, 32));  // stride 2 on an odd image
  BOOST_TEST(!supports(5, 2, 2, 32, 32, 32));  // stride 2 is 3x3 only
  BOOST_TEST(!supports(3, 3, 1, 16, 9, 9));
  BOOST_TEST(!supports(3, 1, 0, 16, 8, 8));  // "valid", not "same"
  BOOST_TEST(!supports(1, 1, 0, 16, 8, 8));  // pointwise: its own GEMM
  BOOST_TEST(!supports(7, 1, 3, 16, 8, 8));
  BOOST_TEST(!supports(3, 1, 1, 12, 8, 8));  // not a multiple of the 8-channel block
}

// On the AVX2 path the 3x3 stride-2 convolutions without bias (ResNet's downsampling ones) run
// oneDNN's primitives (conv2d_onednn.hpp): the same outputs and gradients as im2col + GEMM,
// overwritten and accumulated, with one layer taking a batch, a smaller last batch (its own
// primitives) and the first batch again; ResNet-8's two shapes and an odd one. On other paths,
// with a bias, with allow_library = false (the other tests here, which test lbt's direct
// kernel on every path) or under LBT_CONV=lbt the layer keeps lbt's kernels.
BOOST_AUTO_TEST_CASE(onednn_path_equals_im2col_where_it_is_chosen) {
  const bool routed = nn::OnednnConv::takes_strided_3x3();
  BOOST_TEST(routed == (cpu_path() == CpuPath::kAvx2 && nn::OnednnConv::available()));
  struct Case {
    nn::Shape3 in;
    std::int64_t out;
  };
  for (const Case c : {Case{{16, 32, 32}, 32}, Case{{32, 16, 16}, 64}, Case{{8, 7, 9}, 8}}) {
    BOOST_TEST_CONTEXT(c.in.text() << " -> " << c.out) {
      nn::Conv2dOptions opt{
          .out_channels = c.out, .kernel = 3, .stride = 2, .padding = 1, .bias = false};
      Built path, gemm, with_bias;
      build(path, c.in, opt);
      BOOST_TEST((std::string(path.conv->path_name()) == "oneDNN") == routed);
      opt.bias = true;
      build(with_bias, c.in, opt);
      BOOST_TEST(std::string(with_bias.conv->path_name()) != "oneDNN");
      opt.bias = false;
      opt.allow_library = false;
      Built kept;
      build(kept, c.in, opt);
      BOOST_TEST(std::string(kept.conv->path_name()) != "oneDNN");
      opt.allow_direct = false;
      build(gemm, c.in, opt);
      const auto params = normal_vector(path.store.num_params(), 7, 0.2f);
      std::copy(params.begin(), params.end(), path.store.params().begin());
      std::copy(params.begin(), params.end(), gemm.store.params().begin());
      for (const std::int64_t batch : {6, 3, 6}) {
        const auto x = normal_vector(static_cast<std::size_t>(batch * c.in.size()), 8 + batch);
        const auto dy =
            normal_vector(static_cast<std::size_t>(batch * path.conv->out_features()), 9);
        for (const bool accumulate : {false, true}) {
          const auto got = lbt::test::run_pass(path, x, dy, batch, accumulate);
          const auto want = lbt::test::run_pass(gemm, x, dy, batch, accumulate);
          expect_close(got.y, want.y, "y");
          expect_close(got.dx, want.dx, "dx");
          expect_close(got.grads, want.grads, accumulate ? "accumulated grads" : "grads");
        }
      }
    }
  }
}

// The im2col path's weight gradient takes several images per GEMM (Conv2d::dw_group, side by
// side in one column matrix): a batch's dW and db must equal the sum of its images' taken one
// at a time (a batch of one is always a group of one), on small planes where groups form,
// with a last group shorter than the others, with stride 2 and a 1x1 stride-2 shortcut.
BOOST_AUTO_TEST_CASE(grouped_weight_gradient_equals_the_sum_over_single_images) {
  struct Case {
    nn::Shape3 in;
    std::int64_t out, kernel, stride;
  };
  const Case cases[] = {{{16, 8, 8}, 32, 3, 1},
                        {{32, 14, 14}, 64, 5, 1},
                        {{8, 6, 4}, 16, 3, 2},
                        {{16, 16, 16}, 32, 1, 2}};
  const std::int64_t batch = 7;
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT("in " << c.in.text() << " -> " << c.out << ", k" << c.kernel << " s"
                             << c.stride) {
      const nn::Conv2dOptions opt{.out_channels = c.out,
                                  .kernel = c.kernel,
                                  .stride = c.stride,
                                  .padding = c.kernel / 2,
                                  .bias = true,
                                  .allow_direct = false};
      Built whole, single;
      build(whole, c.in, opt);
      build(single, c.in, opt);
      const auto params = normal_vector(whole.store.num_params(), 7, 0.2f);
      std::copy(params.begin(), params.end(), whole.store.params().begin());
      std::copy(params.begin(), params.end(), single.store.params().begin());
      const std::int64_t in_size = c.in.size(), out_size = whole.conv->out_features();
      const auto x = normal_vector(static_cast<std::size_t>(batch * in_size), 8);
      const auto dy = normal_vector(static_cast<std::size_t>(batch * out_size), 9);
      std::vector<float> y(dy.size()), dx(x.size());
      whole.conv->forward(x.data(), y.data(), batch, true);
      whole.conv->backward(x.data(), y.data(), dy.data(), dx.data(), batch, false);
      for (std::int64_t n = 0; n < batch; ++n) {
        single.conv->forward(x.data() + n * in_size, y.data(), 1, true);
        single.conv->backward(x.data() + n * in_size, y.data(), dy.data() + n * out_size, dx.data(),
                              1, /*accumulate=*/n > 0);
      }
      expect_close(std::vector<float>(whole.store.grads().begin(), whole.store.grads().end()),
                   std::vector<float>(single.store.grads().begin(), single.store.grads().end()),
                   "grads");
    }
  }
}
