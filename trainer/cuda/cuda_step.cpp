// CudaStep: device_step.hpp's operations on one GPU. Every buffer is allocated once, at the
// run's start; the loop's batches come from the host prefetcher (augmented there) and are copied
// up micro-batch by micro-batch.
#include "trainer/cuda/cuda_step.hpp"

#include <algorithm>
#include <map>

#include "core/cuda/gpu.hpp"
#include "core/error.hpp"
#include "nn/cuda/device_mlp.hpp"
#include "optim/cuda/device_optimizer.hpp"
#include "trainer/loop.hpp"

namespace lbt::trainer::cuda {
namespace {

using lbt::cuda::DeviceArray;

// A split on the device: its examples and labels, uploaded at its first evaluation.
struct DeviceSplit {
  DeviceArray<float> x;
  DeviceArray<std::int32_t> labels;
};

class CudaStep final : public DeviceStep {
 public:
  explicit CudaStep(const DeviceStepSetup& s)
      : n_(s.model.store().num_params()),
        in_(s.mlp_widths.front()),
        mlp_(gpu_, s.mlp_widths, s.max_batch, s.model.store().segments(), n_),
        optimizer_(gpu_, s.optimizer, s.model.store().segments(), n_),
        x_(static_cast<std::size_t>(s.max_batch * in_)),
        labels_(static_cast<std::size_t>(s.max_batch)),
        ema_(n_),
        max_batch_(s.max_batch) {}

  double forward_backward(const data::Batch& batch, float grad_scale, bool accumulate,
                          std::int64_t* correct) override {
    const std::int64_t b = batch.size;
    lbt::cuda::copy_to_device(x_.data(), batch.x.data(), static_cast<std::size_t>(b * in_) * 4);
    lbt::cuda::copy_to_device(labels_.data(), batch.labels.data(),
                              static_cast<std::size_t>(b) * sizeof(std::int32_t));
    mlp_.forward(x_.data(), b);
    mlp_.loss(labels_.data(), b, grad_scale);
    mlp_.backward(x_.data(), b, accumulate);  // queued before the loss is read back
    return mlp_.loss_sum(b, correct);
  }

  double grad_sq_norm() override { return gpu_.sum_squares(mlp_.grads(), n_); }

  void update(double lr, std::int64_t step) override {
    optimizer_.step(mlp_.params(), mlp_.grads(), lr, step);
  }

  void update_ema(float alpha) override {
    if (!has_ema_) set_ema_to_weights();
    gpu_.move_towards(ema_.data(), mlp_.params(), alpha, n_);
  }

  Evaluation evaluate(const data::Dataset& split, std::int64_t eval_batch, bool ema) override {
    if (ema && !has_ema_) set_ema_to_weights();  // no step yet: the EMA is the weights
    const DeviceSplit& d = upload(split);
    if (ema) std::swap(mlp_.param_buffer(), ema_);
    double loss = 0.0;
    std::int64_t hits = 0;
    const std::int64_t chunk = std::min(eval_batch, max_batch_);
    for (std::int64_t start = 0; start < split.n; start += chunk) {
      const std::int64_t b = std::min(chunk, split.n - start);
      mlp_.forward(d.x.data() + start * in_, b);
      mlp_.loss(d.labels.data() + start, b, 0.0f);
      std::int64_t correct = 0;
      loss += mlp_.loss_sum(b, &correct);
      hits += correct;
    }
    if (ema) std::swap(mlp_.param_buffer(), ema_);
    Evaluation e;
    e.count = split.n;
    e.accuracy = 0.0;  // an empty split reads 0, as the host's evaluate
    if (split.n > 0) {
      e.loss = loss / static_cast<double>(split.n);
      e.accuracy = static_cast<double>(hits) / static_cast<double>(split.n);
    }
    return e;
  }

  void pull(ParameterStore& store, optim::Optimizer& optimizer, std::vector<float>& ema) override {
    lbt::cuda::copy_to_host(store.params().data(), mlp_.params(), n_ * sizeof(float));
    for (auto& [name, buffer] : optimizer.state().buffers()) {
      const std::vector<float> values = optimizer_.state(name);
      std::copy(values.begin(), values.end(), buffer.data());
    }
    if (has_ema_) ema = ema_.download();
  }

  void push(const ParameterStore& store, const optim::Optimizer& optimizer,
            const std::vector<float>& ema) override {
    lbt::cuda::copy_to_device(mlp_.params(), store.params().data(), n_ * sizeof(float));
    for (const auto& [name, buffer] : optimizer.state().buffers())
      optimizer_.set_state(name, std::span<const float>(buffer.data(), buffer.size()));
    has_ema_ = ema.size() == n_;
    if (has_ema_) ema_.upload(ema);
  }

  std::string describe() const override { return lbt::cuda::describe_device(); }

 private:
  void set_ema_to_weights() {
    lbt::cuda::copy_on_device(ema_.data(), mlp_.params(), n_ * sizeof(float));
    has_ema_ = true;
  }

  const DeviceSplit& upload(const data::Dataset& split) {
    DeviceSplit& d = splits_[&split];
    if (d.x.size() != split.x.size()) {
      d.x = DeviceArray<float>(std::span<const float>(split.x));
      d.labels = DeviceArray<std::int32_t>(std::span<const std::int32_t>(split.labels));
    }
    return d;
  }

  lbt::cuda::Gpu gpu_;  // first: the rest allocate on it
  const std::size_t n_;
  const std::int64_t in_;
  nn::cuda::DeviceMlp mlp_;
  optim::cuda::DeviceOptimizer optimizer_;
  DeviceArray<float> x_;
  DeviceArray<std::int32_t> labels_;
  DeviceArray<float> ema_;
  bool has_ema_ = false;
  const std::int64_t max_batch_;
  std::map<const data::Dataset*, DeviceSplit> splits_;
};

}  // namespace

std::unique_ptr<DeviceStep> make_cuda_step(const DeviceStepSetup& setup) {
  return std::make_unique<CudaStep>(setup);
}

}  // namespace lbt::trainer::cuda
