// CudaStep: device_step.hpp's operations on one GPU. Every buffer is allocated once, at the
// run's start; the loop's batches come from the host prefetcher (augmented there) and are copied
// up micro-batch by micro-batch.
#include "trainer/cuda/cuda_step.hpp"

#include <algorithm>
#include <map>

#include "core/cuda/gpu.hpp"
#include "core/error.hpp"
#include "nn/cuda/device_mlp.hpp"
#include "nn/cuda/device_net.hpp"
#include "noise/cuda/gradient_reader.hpp"
#include "noise/cuda/per_example_sums.hpp"
#include "optim/cuda/device_optimizer.hpp"
#include "trainer/cuda/gradient_allreduce.hpp"
#include "trainer/loop.hpp"

namespace lbt::trainer::cuda {
namespace {

using lbt::cuda::DeviceArray;

// A split on the device: its examples and labels, uploaded at its first evaluation.
struct DeviceSplit {
  DeviceArray<float> x;
  DeviceArray<std::int32_t> labels;
};

// The GPU's model for the plan: the MLP where the layers are a Linear/ReLU stack, else the
// convolutional stack.
std::unique_ptr<nn::cuda::DeviceModel> make_device_model(const lbt::cuda::Gpu& gpu,
                                                         const DeviceStepSetup& s) {
  const std::vector<Segment>& segments = s.model.store().segments();
  const std::size_t n = s.model.store().num_params();
  if (!s.plan.mlp_widths.empty())
    return std::make_unique<nn::cuda::DeviceMlp>(gpu, s.plan.mlp_widths, s.max_batch, segments, n);
  const std::vector<std::int64_t>& shape = s.plan.input_shape;
  if (shape.size() != 3) throw ConfigError("the GPU's convolutions take images [C, H, W]");
  return std::make_unique<nn::cuda::DeviceNet>(
      gpu, s.plan.layers, nn::Shape3{shape[0], shape[1], shape[2]}, s.max_batch, segments, n);
}

std::int64_t example_size(const DeviceStepSetup& s) {
  std::int64_t size = 1;
  for (std::int64_t d : s.plan.input_shape) size *= d;
  return s.plan.mlp_widths.empty() ? size : s.plan.mlp_widths.front();
}

class CudaStep final : public DeviceStep {
 public:
  CudaStep(const DeviceStepSetup& s, const DevicePlacement& placement)
      : placement_(placement),
        n_(s.model.store().num_params()),
        in_(example_size(s)),
        model_(make_device_model(gpu_, s)),
        optimizer_(gpu_, s.optimizer, s.model.store().segments(), n_),
        x_(static_cast<std::size_t>(s.max_batch * in_)),
        labels_(static_cast<std::size_t>(s.max_batch)),
        rows_(static_cast<std::size_t>(s.max_batch)),
        ema_(n_),
        max_batch_(s.max_batch),
        reader_(gpu_, model_->grads(), s.model.store().segments()),
        mlp_(dynamic_cast<nn::cuda::DeviceMlp*>(model_.get())) {
    if (s.per_example_noise) {
      if (!mlp_) throw ConfigError("per-example noise norms on the GPU: an MLP only");
      example_sums_ = std::make_unique<noise::cuda::CudaPerExampleSums>(s.max_batch);
      segment_sums_.resize(s.model.store().segments().size());
    }
    // The training split on the device: a step copies up its rows, not its examples (at batch
    // 2048, 8 KB instead of 6.4 MB).
    if (s.train) train_ = &upload(*s.train);
    for (const DeviceArray<float>* b : model_->buffers())
      buffers_before_step_.emplace_back(b->size());
    if (placement.reduction != GradientReduction::kNone) {
      if (!s.comm) throw Error("a GPU step over several ranks needs their communicator");
      allreduce_ = make_gradient_allreduce(gpu_, *s.comm, placement.reduction);
      ranks_ = s.comm->size();
    }
  }

  double forward_backward(const data::Batch& batch, float grad_scale, bool accumulate,
                          std::int64_t* correct) override {
    const std::int64_t b = batch.size;
    const auto ints = static_cast<std::size_t>(b) * sizeof(std::int32_t);
    if (batch.has_features) {
      lbt::cuda::copy_to_device(x_.data(), batch.x.data(), static_cast<std::size_t>(b * in_) * 4);
    } else {
      if (!train_) throw Error("a batch without features, and no training split on the GPU");
      lbt::cuda::copy_to_device(rows_.data(), batch.rows.data(), ints);
      gpu_.gather_rows(train_->x.data(), in_, rows_.data(), b, x_.data());
    }
    lbt::cuda::copy_to_device(labels_.data(), batch.labels.data(), ints);
    last_batch_ = b;
    model_->forward(x_.data(), b, /*train=*/true);
    model_->loss(labels_.data(), b, grad_scale);
    model_->backward(x_.data(), b, accumulate);  // queued before the loss is read back
    return model_->loss_sum(b, correct);
  }

  bool keeps_train_split() const override { return train_ != nullptr; }

  double allreduce_sq_norm() override {
    if (allreduce_) allreduce_->average(model_->grads(), n_);
    return gpu_.sum_squares(model_->grads(), n_);
  }

  // The MLP's layer l is segments 2l (weight) and 2l + 1 (bias), as DeviceMlp's table.
  std::span<const double> per_example_sums(double grad_scale) override {
    if (!example_sums_) throw Error("per-example sums asked of a step set up without them");
    std::vector<noise::LinearTap> taps;
    for (std::size_t l = 0; l < mlp_->num_layers(); ++l)
      taps.push_back({l == 0 ? x_.data() : mlp_->hidden_output(l - 1), mlp_->layer_output_grad(l),
                      mlp_->layer_in(l), mlp_->layer_out(l), 2 * l,
                      static_cast<std::ptrdiff_t>(2 * l + 1)});
    std::fill(segment_sums_.begin(), segment_sums_.end(), 0.0);
    example_sums_->add(taps, last_batch_, grad_scale, segment_sums_);
    return segment_sums_;
  }

  noise::GradientReader& gradient_reader() override { return reader_; }

  void update(double lr, std::int64_t step) override {
    optimizer_.step(model_->params(), model_->grads(), lr, step);
  }

  // Device-to-device copies of a few KB, queued with the step's kernels (no host wait).
  void keep_layer_buffers() override {
    const auto now = model_->buffers();
    for (std::size_t i = 0; i < now.size(); ++i)
      lbt::cuda::copy_on_device(buffers_before_step_[i].data(), now[i]->data(), now[i]->size() * 4);
  }
  void restore_layer_buffers() override {
    const auto now = model_->buffers();
    for (std::size_t i = 0; i < now.size(); ++i)
      lbt::cuda::copy_on_device(now[i]->data(), buffers_before_step_[i].data(), now[i]->size() * 4);
  }

  void update_ema(float alpha) override {
    if (!has_ema_) set_ema_to_weights();
    gpu_.move_towards(ema_.data(), model_->params(), alpha, n_);
  }

  ClassificationSums evaluate(const data::Dataset& split, std::int64_t begin, std::int64_t end,
                              std::int64_t eval_batch, bool ema) override {
    if (ema && !has_ema_) set_ema_to_weights();  // no step yet: the EMA is the weights
    const DeviceSplit& d = upload(split);
    if (ema) std::swap(model_->param_buffer(), ema_);
    ClassificationSums sums;
    const std::int64_t chunk = std::min(eval_batch, max_batch_);
    for (std::int64_t start = begin; start < end; start += chunk) {
      const std::int64_t b = std::min(chunk, end - start);
      model_->forward(d.x.data() + start * in_, b, /*train=*/false);
      model_->loss(d.labels.data() + start, b, 0.0f);
      std::int64_t correct = 0;
      double squares = 0.0;
      sums.loss += model_->loss_sum(b, &correct, &squares);
      sums.correct += static_cast<double>(correct);
      sums.loss_squares += squares;
    }
    if (ema) std::swap(model_->param_buffer(), ema_);
    sums.count = static_cast<double>(end - begin);
    return sums;
  }

  void pull(nn::Model& model, optim::Optimizer& optimizer, std::vector<float>& ema) override {
    lbt::cuda::copy_to_host(model.store().params().data(), model_->params(), n_ * sizeof(float));
    pull_layer_buffers(model);
    for (auto& [name, buffer] : optimizer.state().buffers()) {
      const std::vector<float> values = optimizer_.state(name);
      std::copy(values.begin(), values.end(), buffer.data());
    }
    if (has_ema_) ema = ema_.download();
  }

  void push(nn::Model& model, const optim::Optimizer& optimizer,
            const std::vector<float>& ema) override {
    lbt::cuda::copy_to_device(model_->params(), model.store().params().data(), n_ * sizeof(float));
    push_layer_buffers(model);
    for (const auto& [name, buffer] : optimizer.state().buffers())
      optimizer_.set_state(name, std::span<const float>(buffer.data(), buffer.size()));
    has_ema_ = ema.size() == n_;
    if (has_ema_) ema_.upload(ema);
  }

  void pull_layer_buffers(nn::Model& model) override {
    const auto host = model.buffers();
    const auto device = layer_buffers(host);
    for (std::size_t i = 0; i < host.size(); ++i)
      lbt::cuda::copy_to_host(host[i].data(), device[i]->data(), host[i].size_bytes());
  }

  void push_layer_buffers(nn::Model& model) override {
    const auto host = model.buffers();
    const auto device = layer_buffers(host);
    for (std::size_t i = 0; i < host.size(); ++i)
      lbt::cuda::copy_to_device(device[i]->data(), host[i].data(), host[i].size_bytes());
  }

  // "NVIDIA H100 80GB HBM3, sm_90, 79 GiB (device 1), 8 ranks, gradients by NCCL"
  std::string describe() const override {
    std::string d =
        lbt::cuda::describe_device() + " (device " + std::to_string(placement_.device) + ")";
    if (allreduce_)
      d += ", " + std::to_string(ranks_) + " ranks, gradients by " +
           trainer::describe(placement_.reduction);
    return d;
  }

 private:
  // The device model's layer buffers, checked against the host model's, pair by pair.
  std::vector<DeviceArray<float>*> layer_buffers(const std::vector<std::span<float>>& host) {
    std::vector<DeviceArray<float>*> device = model_->buffers();
    bool same = device.size() == host.size();
    for (std::size_t i = 0; same && i < host.size(); ++i)
      same = device[i]->size() == host[i].size();
    if (!same) throw Error("the GPU model's layer buffers differ from the CPU model's");
    return device;
  }

  void set_ema_to_weights() {
    lbt::cuda::copy_on_device(ema_.data(), model_->params(), n_ * sizeof(float));
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

  const DevicePlacement placement_;
  lbt::cuda::Gpu gpu_;  // before the rest: they allocate on it
  const std::size_t n_;
  const std::int64_t in_;
  std::unique_ptr<nn::cuda::DeviceModel> model_;
  optim::cuda::DeviceOptimizer optimizer_;
  DeviceArray<float> x_;
  DeviceArray<std::int32_t> labels_, rows_;
  DeviceArray<float> ema_;
  std::vector<DeviceArray<float>> buffers_before_step_;  // keep_layer_buffers' copy
  bool has_ema_ = false;
  const std::int64_t max_batch_;
  std::map<const data::Dataset*, DeviceSplit> splits_;
  const DeviceSplit* train_ = nullptr;
  noise::cuda::CudaGradientReader reader_;
  nn::cuda::DeviceMlp* const mlp_;  // model_ where it is a plain MLP, else nullptr
  std::unique_ptr<noise::cuda::CudaPerExampleSums> example_sums_;  // per_example_noise only
  std::vector<double> segment_sums_;
  std::int64_t last_batch_ = 0;
  std::unique_ptr<GradientAllreduce> allreduce_;  // several ranks only
  int ranks_ = 1;
};

}  // namespace

std::unique_ptr<DeviceStep> make_cuda_step(const DeviceStepSetup& setup,
                                           const DevicePlacement& placement) {
  return std::make_unique<CudaStep>(setup, placement);
}

}  // namespace lbt::trainer::cuda
