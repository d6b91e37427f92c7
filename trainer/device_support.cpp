// device_model_plan: the checks of device_support.hpp, one ConfigError per thing not built.
#include "trainer/device_support.hpp"

#include <functional>
#include <numeric>
#include <string>

#include "core/error.hpp"
#include "nn/layer_spec.hpp"

namespace lbt::trainer {
namespace {

void refuse(const std::string& device, const std::string& what, const std::string& hint) {
  throw ConfigError("model.device=" + device + " " + what, hint + ", or set model.device=cpu");
}

// Linear (with bias), then ReLU + Linear any number of times: DeviceMlp's layers.
std::vector<std::int64_t> stack_widths(const std::vector<nn::LayerSpec>& layers,
                                       std::int64_t input_dim) {
  std::vector<std::int64_t> widths;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    const nn::LayerSpec& l = layers[i];
    const bool linear_here = i % 2 == 0;
    if (linear_here && (l.type != "linear" || !l.bias)) return {};
    if (!linear_here && l.type != "relu") return {};
    if (linear_here) {
      if (widths.empty()) widths.push_back(l.in > 0 ? l.in : input_dim);
      widths.push_back(l.out);
    }
  }
  if (layers.empty() || layers.size() % 2 == 0) return {};
  return widths;
}

// The layers the GPU's network runs (nn/cuda/device_net.hpp): all but dropout, and pools only
// with windows side by side.
bool device_net_runs(const std::vector<nn::LayerSpec>& layers) {
  for (const nn::LayerSpec& l : layers) {
    const bool pool = l.type == "pool" || l.type == "avgpool";
    const bool ok = l.type == "conv" || l.type == "relu" || l.type == "linear" ||
                    l.type == "batchnorm" || l.type == "residual" || l.type == "global_avgpool" ||
                    (pool && l.stride == l.kernel);
    if (!ok) return false;
  }
  return !layers.empty() && layers.back().type == "linear";
}

}  // namespace

DeviceModelPlan device_model_plan(const RunConfig& run,
                                  const std::vector<std::int64_t>& data_shape) {
  const TrainConfig& t = run.train;
  const std::string& d = t.device;
  if (t.overlap_comm)
    refuse(d, "has no gradient reduction to overlap", "set train.overlap_comm=false");
  if (t.local_sgd.enabled()) refuse(d, "does not run local SGD", "set train.sync_every=1");
  if (t.loss == "mse") refuse(d, "trains with softmax cross-entropy only", "set model.loss=auto");
  DeviceModelPlan plan;
  plan.input_shape = data_shape;
  if (t.model_layers.empty()) {
    nn::ExpandedSpec spec = nn::expand_spec(t.model_spec, data_shape);
    plan.layers = std::move(spec.layers);
    if (!spec.input_shape.empty()) plan.input_shape = spec.input_shape;
  } else {
    plan.layers = t.model_layers;
  }
  if (plan.input_shape.size() == 2) plan.input_shape.insert(plan.input_shape.begin(), 1);
  const std::int64_t features = std::accumulate(plan.input_shape.begin(), plan.input_shape.end(),
                                                std::int64_t{1}, std::multiplies<>());
  plan.mlp_widths = stack_widths(plan.layers, plan.input_shape.empty() ? 0 : features);
  if (run.noise.enabled && !run.noise.two_batch && plan.mlp_widths.empty())
    refuse(d,
           "computes per-example gradient norms for MLPs only (Linear layers with biases and "
           "ReLUs); " +
               t.model_name() + " is not one",
           "set noise.estimator=two_batch with train.accum_steps >= 2");
  if (plan.mlp_widths.empty() && !device_net_runs(plan.layers))
    refuse(d,
           "runs linear, relu, conv, batchnorm, residual, global_avgpool, pool and avgpool "
           "layers (pools with stride = kernel), ending in a linear; " +
               t.model_name() + " has others",
           "use model.spec=mlp:IN-H1-...-OUT, cnn:simple or resnet:N");
  return plan;
}

}  // namespace lbt::trainer
