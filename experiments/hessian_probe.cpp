// Hessian-weighted B_noise probes; see hessian_probe.hpp.
#include "experiments/hessian_probe.hpp"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "core/json_number.hpp"
#include "nn/backend.hpp"
#include "noise/hessian_noise.hpp"
#include "noise/noise_keys.hpp"

namespace lbt::experiments {
namespace {

// Mean gradient over rows `rows` of `data` into `out`, in chunks of `chunk` examples.
void mean_gradient(nn::Model& model, const data::Dataset& data,
                   const std::vector<std::int64_t>& rows, std::int64_t chunk,
                   std::span<float> out) {
  ParameterStore& store = model.store();
  std::vector<float> x(static_cast<std::size_t>(chunk * data.dim)), targets;
  std::vector<std::int32_t> labels(static_cast<std::size_t>(chunk));
  targets.resize(static_cast<std::size_t>(chunk * std::max<std::int64_t>(data.target_dim, 1)));
  const float scale = 1.0f / static_cast<float>(rows.size());
  for (std::size_t start = 0; start < rows.size(); start += chunk) {
    const std::int64_t b = std::min<std::int64_t>(chunk, rows.size() - start);
    for (std::int64_t j = 0; j < b; ++j) {
      data.copy_example(rows[start + j], j, x.data(), labels.data(), targets.data());
    }
    const float* out_act = model.forward(x.data(), b, true);
    if (data.is_classification()) {
      model.backend().softmax_cross_entropy(out_act, labels.data(), b, model.output_dim(),
                                            model.output_grad(), scale, nullptr);
    } else {
      model.backend().half_squared_error(out_act, targets.data(), b, model.output_dim(),
                                         model.output_grad(), scale);
    }
    model.backward(x.data(), b, /*accumulate=*/start > 0);
  }
  std::copy(store.grads().begin(), store.grads().end(), out.begin());
}

}  // namespace

HessianOptions read_hessian_options(Config& config) {
  HessianOptions h;
  const auto& keys = noise::noise_keys();
  h.enabled = config.get_bool(Schema::in(keys, "noise.hessian.enabled"));
  h.every = config.get_int(Schema::in(keys, "noise.hessian.every"));
  h.small_batches = config.get_int(Schema::in(keys, "noise.hessian.small_batches"));
  h.examples = config.get_int(Schema::in(keys, "noise.hessian.examples"));
  // The jackknife interval leaves one out and needs a pair left; the probe keeps every small
  // batch's gradient and their K x K Gram matrix, so a million passed --check and ended in
  // std::bad_alloc at the probe's step (2026-11-29 audit).
  if (h.small_batches < 3 || h.small_batches > 1024)
    config.fail("noise.hessian.small_batches", "3 to 1024 (each small batch's gradient is kept)",
                std::to_string(h.small_batches));
  if (h.examples < 1) config.fail("noise.hessian.examples", ">= 1", std::to_string(h.examples));
  if (h.every < 0) config.fail("noise.hessian.every", ">= 0 (0: never)", std::to_string(h.every));
  return h;
}

std::function<void(std::int64_t, ProbeContext&)> hessian_probe(
    const HessianOptions& h, const std::vector<std::int64_t>& at_steps) {
  const std::vector<std::int64_t> at = h.enabled ? at_steps : std::vector<std::int64_t>{};
  if (at.empty() && h.every <= 0) return {};
  return [at, h](std::int64_t step, ProbeContext& ctx) {
    const bool listed = std::find(at.begin(), at.end(), step) != at.end();
    if (listed || (h.every > 0 && step % h.every == 0)) probe_b_noise(step, ctx, h);
  };
}

noise::HessianNoise b_simple_of_batches(const std::vector<std::vector<float>>& small,
                                        std::int64_t b) {
  const std::size_t K = small.size();
  std::vector<double> gram(K * K);
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t l = k; l < K; ++l) {
      double dot = 0.0;
      for (std::size_t i = 0; i < small[k].size(); ++i)
        dot += static_cast<double>(small[k][i]) * small[l][i];
      gram[k * K + l] = gram[l * K + k] = dot;
    }
  return noise::hessian_noise_from_products(gram, K, static_cast<double>(b));
}

// Hessian-weighted B_noise at the current parameters (noise/hessian_noise.hpp), written to
// noise.jsonl as estimator "hessian". Parameters are restored; gradients are scratch here.
void probe_b_noise(std::int64_t step, ProbeContext& ctx, const HessianOptions& h) {
  nn::Model& model = ctx.model;
  const data::Dataset& data = ctx.data.train;
  const std::int64_t b = ctx.config.micro_batch;
  const std::size_t n = model.store().num_params();
  std::mt19937_64 rng(ctx.config.seed * 1000003 + static_cast<std::uint64_t>(step));
  std::uniform_int_distribution<std::int64_t> pick(0, data.n - 1);
  auto draw = [&](std::int64_t count) {
    std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
    for (auto& r : rows) r = pick(rng);
    return rows;
  };
  // Train-mode forwards update BatchNorm's running statistics: the probe must leave no trace.
  std::vector<std::vector<float>> saved_buffers;
  for (std::span<float> buf : model.buffers()) saved_buffers.emplace_back(buf.begin(), buf.end());
  std::vector<std::vector<float>> small(static_cast<std::size_t>(h.small_batches),
                                        std::vector<float>(n));
  for (auto& g : small) mean_gradient(model, data, draw(b), b, g);
  const std::vector<float> theta(model.store().params().begin(), model.store().params().end());
  const std::vector<std::int64_t> big_rows = draw(std::min(h.examples, data.n));
  noise::GradientFn grad = [&](std::span<const float> params, std::span<float> out) {
    std::copy(params.begin(), params.end(), model.store().params().begin());
    mean_gradient(model, data, big_rows, std::max<std::int64_t>(b, 256), out);
  };
  const noise::HessianNoise r =
      noise::hessian_noise_scale(grad, theta, small, static_cast<double>(b));
  std::copy(theta.begin(), theta.end(), model.store().params().begin());
  model.store().zero_grads();
  const auto buffers = model.buffers();
  for (std::size_t i = 0; i < buffers.size(); ++i)
    std::copy(saved_buffers[i].begin(), saved_buffers[i].end(), buffers[i].begin());
  const noise::HessianNoise simple = b_simple_of_batches(small, b);
  if (ctx.run_dir) {
    ctx.run_dir->append_noise(
        {{"step", step},
         {"estimator", "hessian"},
         {"b_noise", finite_or_null(r.b_noise)},
         {"b_noise_ci95", {finite_or_null(r.ci_low), finite_or_null(r.ci_high)}},
         {"resolved", r.resolved},
         {"tr_H_sigma", r.tr_H_sigma},
         {"tr_H_sigma_ci95",
          {finite_or_null(r.tr_H_sigma - r.tr_H_sigma_half),
           finite_or_null(r.tr_H_sigma + r.tr_H_sigma_half)}},
         {"gHg", r.gHg},
         {"gHg_ci95", {finite_or_null(r.gHg - r.gHg_half), finite_or_null(r.gHg + r.gHg_half)}},
         {"b_simple_same_batches", finite_or_null(simple.b_noise)},
         {"b_simple_same_batches_ci95",
          {finite_or_null(simple.ci_low), finite_or_null(simple.ci_high)}},
         {"small_batches", small.size()},
         {"b_small", b},
         {"hvp_examples", big_rows.size()}});
  }
}

}  // namespace lbt::experiments
