// device_mlp_widths: the checks of device_support.hpp, one ConfigError per thing not built.
#include "trainer/device_support.hpp"

#include <string>

#include "core/error.hpp"
#include "nn/layer_spec.hpp"

namespace lbt::trainer {
namespace {

void refuse(const std::string& device, const std::string& what, const std::string& hint) {
  throw ConfigError("model.device=" + device + " " + what,
                    hint + ", or set model.device=cpu");
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

}  // namespace

std::vector<std::int64_t> device_mlp_widths(const RunConfig& run, int ranks,
                                            std::int64_t input_dim) {
  const TrainConfig& t = run.train;
  const std::string& d = t.device;
  if (ranks > 1)
    refuse(d, "runs one process: " + std::to_string(ranks) +
                  " ranks would need NCCL across ranks, which is not built yet",
           "run one process (no mpirun)");
  if (run.noise.enabled)
    refuse(d, "does not estimate the gradient noise scale yet (noise.enabled)",
           "set noise.enabled=false (lbt noise runs on the CPU)");
  if (t.overlap_comm) refuse(d, "has no gradient reduction to overlap", "set train.overlap_comm=false");
  if (t.local_sgd.enabled()) refuse(d, "does not run local SGD", "set train.sync_every=1");
  if (t.loss == "mse") refuse(d, "trains with softmax cross-entropy only", "set model.loss=auto");
  const std::vector<nn::LayerSpec> layers =
      t.model_layers.empty() ? nn::expand_spec(t.model_spec, {}).layers : t.model_layers;
  std::vector<std::int64_t> widths = stack_widths(layers, input_dim);
  if (widths.empty())
    refuse(d, "runs an MLP of Linear layers (with bias) and ReLUs between them so far; " +
                  t.model_name() + " is not one",
           "use model.spec=mlp:IN-H1-...-OUT");
  return widths;
}

}  // namespace lbt::trainer
