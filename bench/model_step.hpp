// One training step of a model on a fixed random batch: forward, softmax cross-entropy,
// backward and an SGD momentum update (momentum 0.9, lr 1e-3), as bench/reference/torch_mlp.py
// and torch_cnn.py step PyTorch. Shared by bench_mlp_step and bench_cnn_step.
#pragma once
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "nn/model.hpp"
#include "optim/optimizer_options.hpp"

namespace lbt::bench {

class ModelStep {
 public:
  // @param shape per-example [C, H, W] for image models; empty for an MLP.
  ModelStep(const std::string& spec, const std::vector<std::int64_t>& shape, std::int64_t batch)
      : model_(nn::Model::from_spec(spec, nn::InitScheme::kHe, shape)), batch_(batch) {
    auto rng = make_rng(0, RngStream::kInit);
    model_->build(rng);
    model_->reserve(batch);
    optim::OptimizerOptions sgd;  // momentum SGD, momentum 0.9
    optimizer_ = optim::make_optimizer(sgd, model_->store().num_params(), model_->backend());
    // x: [batch, input_dim], labels: [batch]
    x_.resize(static_cast<std::size_t>(batch * model_->input_dim()));
    labels_.resize(static_cast<std::size_t>(batch));
    std::normal_distribution<float> normal;
    for (auto& v : x_) v = normal(rng);
    for (auto& y : labels_) y = static_cast<std::int32_t>(rng() % model_->output_dim());
  }

  // Step t of the optimizer (its bias corrections and momentum see t).
  void operator()(std::int64_t t) {
    ParameterStore& store = model_->store();
    const float* logits = model_->forward(x_.data(), batch_, true);
    model_->backend().softmax_cross_entropy(logits, labels_.data(), batch_, model_->output_dim(),
                                            model_->output_grad(), 1.0f / batch_, nullptr);
    model_->backward(x_.data(), batch_, /*accumulate=*/false);
    optimizer_->step({store.params(), store.grads(), store.segments(), 1e-3, t});
  }

  nn::Model& model() { return *model_; }

 private:
  std::unique_ptr<nn::Model> model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::int64_t batch_;
  std::vector<float> x_;
  std::vector<std::int32_t> labels_;
};

}  // namespace lbt::bench
