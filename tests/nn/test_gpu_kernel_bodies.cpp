// The GPU's BatchNorm, bias-gradient and pooling kernels' bodies (nn/cuda/kernel_bodies.hpp) run
// here on the CPU, for every index a grid would give them, against the CPU's own layers: the
// slices a channel's blocks sum cover each of its values once, whatever the batch and channel
// count; BatchNorm's forward in both modes, running statistics and backward, and a convolution's
// bias gradient agree with nn::BatchNorm and nn::Conv2d to float32 round-off of sums in another
// order; the pools equal the CPU's bit for bit (the same sums in the same order) or to round-off
// (the global pool's CPU sum is vectorised). No GPU needed: what is left to one is the launch and
// the order of the in-block tree sums.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

#include "core/params.hpp"
#include "core/rng.hpp"
#include "nn/cpu/batch_norm.hpp"
#include "nn/cpu/conv2d.hpp"
#include "nn/cpu/pool.hpp"
#include "nn/cuda/kernel_bodies.hpp"
#include "support/layer_check.hpp"
#include "support/random.hpp"

using namespace lbt;
namespace body = lbt::nn::cuda::body;
using lbt::test::normal_vector;

namespace {

float largest(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

// max |a - b| over the largest |b|.
double relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, double(std::fabs(a[i] - b[i])));
  return worst / largest(b);
}

// The partial sums of a channel's blocks as the GPU makes them ([C][P][2]): block p of P over
// its slice, the values each thread would take added here in index order.
template <class Terms>
std::vector<double> channel_partials(std::int64_t batch, std::int64_t C, std::int64_t HW,
                                     Terms terms) {
  const std::int64_t P = body::bn_blocks_per_channel(batch, C);
  std::vector<double> partials(static_cast<std::size_t>(C * P * 2));
  for (std::int64_t c = 0; c < C; ++c)
    for (std::int64_t p = 0; p < P; ++p) {
      const body::Slice s = body::bn_slice(p, P, batch);
      double s1 = 0.0, s2 = 0.0;
      for (std::int64_t i = 0; i < s.images() * HW; ++i)
        terms(body::bn_element(s, i, c, C, HW), c, s1, s2);
      partials[(c * P + p) * 2] = s1, partials[(c * P + p) * 2 + 1] = s2;
    }
  return partials;
}

// A channel's two sums: the blocks' partials added in block order.
template <class Terms>
std::vector<double> channel_sums(std::int64_t batch, std::int64_t C, std::int64_t HW, Terms terms) {
  const std::int64_t P = body::bn_blocks_per_channel(batch, C);
  const std::vector<double> partials = channel_partials(batch, C, HW, terms);
  std::vector<double> sums(2 * C);
  for (std::int64_t c = 0; c < C; ++c)
    body::bn_add_partials(partials.data(), c, P, sums[2 * c], sums[2 * c + 1]);
  return sums;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(gpu_kernel_bodies)

BOOST_AUTO_TEST_CASE(a_channels_blocks_take_each_of_its_values_once) {
  for (std::int64_t C : {1, 3, 16, 64, 600}) {
    for (std::int64_t batch = 1; batch <= 70; ++batch) {
      const std::int64_t HW = 3, P = body::bn_blocks_per_channel(batch, C);
      BOOST_TEST_REQUIRE((P >= 1 && P <= batch));
      BOOST_TEST(P * C <= std::max<std::int64_t>(512, C));
      for (std::int64_t c : {std::int64_t{0}, C - 1}) {
        std::multiset<std::int64_t> seen;
        for (std::int64_t p = 0; p < P; ++p) {
          const body::Slice s = body::bn_slice(p, P, batch);
          for (std::int64_t i = 0; i < s.images() * HW; ++i)
            seen.insert(body::bn_element(s, i, c, C, HW));
        }
        std::multiset<std::int64_t> expected;
        for (std::int64_t n = 0; n < batch; ++n)
          for (std::int64_t j = 0; j < HW; ++j) expected.insert((n * C + c) * HW + j);
        BOOST_TEST((seen == expected), "C " << C << " batch " << batch << " channel " << c);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(batch_norm_bodies_equal_the_cpu_batch_norm_in_both_modes) {
  struct Case {
    nn::Shape3 shape;
    std::int64_t batch;
  };
  // uneven slices (33 images over 16 channels' 32 blocks), BatchNorm1d, a plain small one
  for (const Case& k : {Case{{16, 5, 4}, 33}, Case{{10, 1, 1}, 9}, Case{{3, 5, 7}, 6}}) {
    const std::int64_t C = k.shape.c, HW = k.shape.plane(), batch = k.batch;
    const std::int64_t n = batch * k.shape.size();
    nn::BatchNorm cpu(k.shape);
    ParameterStore store;
    cpu.register_params(store, "bn");
    store.allocate();
    cpu.bind(store);
    const auto affine = normal_vector(2 * C, 5, 0.4f);  // gamma = 1 + ..., beta = ...
    for (std::int64_t c = 0; c < C; ++c) {
      store.params()[store.segments()[0].offset + c] = 1.0f + affine[c];
      store.params()[store.segments()[1].offset + c] = affine[C + c];
      cpu.running_mean()[c] = 0.1f * static_cast<float>(c);
      cpu.running_var()[c] = 1.0f + 0.2f * static_cast<float>(c);
    }
    const float* gamma = store.params().data() + store.segments()[0].offset;
    const float* beta = store.params().data() + store.segments()[1].offset;
    std::vector<float> running_mean(cpu.running_mean().begin(), cpu.running_mean().end());
    std::vector<float> running_var(cpu.running_var().begin(), cpu.running_var().end());
    auto x = normal_vector(n, 7, 2.0f);
    for (float& v : x) v += 3.0f;  // a mean far from 0: the shifted sums matter
    const auto dy = normal_vector(n, 8);

    // train mode: the GPU's sums, maps and outputs
    const auto sums =
        channel_sums(batch, C, HW, [&](std::int64_t e, std::int64_t c, double& a, double& b) {
          body::bn_forward_terms(x.data(), e, c, HW, a, b);
        });
    std::vector<float> maps(C * body::kMapFloats), y(n), y_cpu(n);
    for (std::int64_t c = 0; c < C; ++c)
      body::store_map(maps.data(), c,
                      nn::bn::train_map(sums[2 * c], sums[2 * c + 1], x[c * HW], batch * HW, 0.1,
                                        1e-5, gamma[c], beta[c], running_mean[c], running_var[c]));
    for (std::int64_t i = 0; i < n; ++i) y[i] = body::bn_output(x.data(), maps.data(), i, C, HW);
    cpu.forward(x.data(), y_cpu.data(), batch, true);
    BOOST_TEST(relative_error(y, y_cpu) <= 1e-5);
    for (std::int64_t c = 0; c < C; ++c) {
      BOOST_TEST(running_mean[c] == cpu.running_mean()[c], boost::test_tools::tolerance(1e-5f));
      BOOST_TEST(running_var[c] == cpu.running_var()[c], boost::test_tools::tolerance(1e-5f));
    }

    // its backward: coefficients, input gradient, d gamma and d beta
    const auto grad_sums =
        channel_sums(batch, C, HW, [&](std::int64_t e, std::int64_t c, double& a, double& b) {
          body::bn_backward_terms(x.data(), dy.data(), e, body::load_map(maps.data(), c).mean, a,
                                  b);
        });
    std::vector<float> grads(C * body::kGradFloats), dgamma(C), dbeta(C), dx(n), dx_cpu(n);
    for (std::int64_t c = 0; c < C; ++c)
      body::store_grad(grads.data(), c,
                       nn::bn::grad_coefficients(grad_sums[2 * c], grad_sums[2 * c + 1],
                                                 body::load_map(maps.data(), c), gamma[c],
                                                 batch * HW, true, false, dgamma[c], dbeta[c]));
    for (std::int64_t i = 0; i < n; ++i)
      dx[i] = body::bn_input_grad(x.data(), dy.data(), maps.data(), grads.data(), i, C, HW);
    cpu.backward(x.data(), y_cpu.data(), dy.data(), dx_cpu.data(), batch, false);
    BOOST_TEST(relative_error(dx, dx_cpu) <= 1e-4);
    const float* dgamma_cpu = store.grads().data() + store.segments()[0].offset;
    const float* dbeta_cpu = store.grads().data() + store.segments()[1].offset;
    BOOST_TEST(relative_error(dgamma, std::vector<float>(dgamma_cpu, dgamma_cpu + C)) <= 1e-5);
    BOOST_TEST(relative_error(dbeta, std::vector<float>(dbeta_cpu, dbeta_cpu + C)) <= 1e-5);

    // eval mode: the running statistics both kept
    for (std::int64_t c = 0; c < C; ++c)
      body::store_map(
          maps.data(), c,
          nn::bn::eval_map(cpu.running_mean()[c], cpu.running_var()[c], 1e-5, gamma[c], beta[c]));
    for (std::int64_t i = 0; i < n; ++i) y[i] = body::bn_output(x.data(), maps.data(), i, C, HW);
    cpu.forward(x.data(), y_cpu.data(), batch, false);
    BOOST_TEST((y == y_cpu));  // the same map, the same fma: bit for bit
  }
}

// A convolution's bias gradient as the GPU's channel_sums makes it (value_term through the
// BatchNorm's blocks, then store_channel_total) against the CPU Conv2d's: uneven slices (33
// images, 16 channels' 32 blocks each), one block per channel (600 channels), one image; written,
// then added to as for a second micro-batch.
BOOST_AUTO_TEST_CASE(the_bias_gradient_bodies_equal_the_cpu_convolutions) {
  struct Case {
    nn::Shape3 in;
    std::int64_t out_c, batch;
  };
  for (const Case& k : {Case{{2, 6, 5}, 16, 33}, Case{{1, 4, 4}, 600, 3}, Case{{3, 5, 5}, 4, 1}}) {
    nn::Conv2d conv(k.in, {.out_channels = k.out_c, .kernel = 3, .stride = 1, .padding = 1},
                    nn::InitScheme::kHe);
    ParameterStore store;
    lbt::test::bind_fresh(conv, store, "c", 4);
    const nn::Shape3 out = conv.out_shape();
    const std::int64_t C = out.c, P = body::bn_blocks_per_channel(k.batch, C);
    const auto x = normal_vector(k.batch * k.in.size(), 31);
    auto dy = normal_vector(k.batch * out.size(), 32);
    for (float& v : dy) v += 0.5f;  // sums far from 0
    std::vector<float> y(dy.size()), dx(x.size());
    conv.forward(x.data(), y.data(), k.batch, true);
    conv.backward(x.data(), y.data(), dy.data(), dx.data(), k.batch, false);
    const float* db_cpu = store.grads().data() + store.segments()[1].offset;

    const auto partials = channel_partials(k.batch, C, out.plane(),
                                           [&](std::int64_t e, std::int64_t, double& a, double&) {
                                             body::value_term(dy.data(), e, a);
                                           });
    std::vector<float> db(C, 7.0f);
    for (std::int64_t c = 0; c < C; ++c)
      body::store_channel_total(partials.data(), c, P, false, db.data());
    BOOST_TEST(relative_error(db, std::vector<float>(db_cpu, db_cpu + C)) <= 1e-5);
    const std::vector<float> once = db;
    for (std::int64_t c = 0; c < C; ++c)
      body::store_channel_total(partials.data(), c, P, true, db.data());
    for (std::int64_t c = 0; c < C; ++c) BOOST_TEST(db[c] == 2.0f * once[c]);
  }
}

BOOST_AUTO_TEST_CASE(pool_and_residual_bodies_equal_the_cpu_layers) {
  // 2 x 2 windows over 7 x 9 planes: the last row and column are in no window
  const nn::Shape3 in{3, 7, 9};
  const std::int64_t batch = 2, k = 2, ho = in.h / k, wo = in.w / k, planes = batch * in.c;
  nn::AvgPool2d pool(in, k, k);
  const auto x = normal_vector(batch * in.size(), 21);
  const auto dy = normal_vector(planes * ho * wo, 22);
  std::vector<float> y(planes * ho * wo), y_cpu(y.size()), dx(x.size()), dx_cpu(x.size(), 7.0f);
  const float scale = 1.0f / static_cast<float>(k * k);
  for (std::size_t i = 0; i < y.size(); ++i)
    y[i] = body::avg_pool_output(x.data(), i, in.h, in.w, k, ho, wo, scale);
  for (std::size_t i = 0; i < x.size(); ++i)
    dx[i] = body::avg_pool_input_grad(dy.data(), i, in.h, in.w, k, ho, wo, scale);
  pool.forward(x.data(), y_cpu.data(), batch, true);
  pool.backward(x.data(), y_cpu.data(), dy.data(), dx_cpu.data(), batch, false);
  BOOST_TEST((y == y_cpu));
  BOOST_TEST((dx == dx_cpu));

  nn::GlobalAvgPool global(in);
  std::vector<float> g(planes), g_cpu(planes);
  for (std::int64_t p = 0; p < planes; ++p)
    g[p] = body::plane_mean(x.data(), p, in.plane(), 1.0f / static_cast<float>(in.plane()));
  global.forward(x.data(), g_cpu.data(), batch, true);
  BOOST_TEST(relative_error(g, g_cpu) <= 1e-6);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (float a : {-2.0f, -0.5f, 0.0f, 0.25f, 3.0f})
    for (float b : {-1.0f, 0.0f, 0.5f})
      BOOST_TEST(body::relu_of_sum(a, b) == std::max(a + b, 0.0f));
  BOOST_TEST(std::isnan(body::relu_of_sum(nan, 1.0f)));  // as std::max(NaN, 0): kept
}

BOOST_AUTO_TEST_SUITE_END()
