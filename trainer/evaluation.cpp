// batch_loss and evaluate; see evaluation.hpp and loop.hpp.
#include "trainer/evaluation.hpp"

#include <algorithm>
#include <span>
#include <vector>

#include "trainer/loop.hpp"
#include "trainer/nn/loss.hpp"

namespace lbt::trainer {

// Sum of per-example losses of one batch, and (optionally) d(loss)/d(output) * grad_scale
// into the model's output-gradient buffer. correct: argmax hits (classification).
double batch_loss(nn::Model& model, const float* out, const data::Dataset& data,
                  const std::int32_t* labels, const float* targets, std::int64_t batch,
                  float grad_scale, bool want_grad, std::int64_t* correct) {
  float* dout = want_grad ? model.output_grad() : nullptr;
  if (data.is_classification()) {
    return nn::softmax_cross_entropy(out, labels, batch, model.output_dim(), dout, grad_scale,
                                     correct);
  }
  if (correct) *correct = 0;
  return nn::half_squared_error(out, targets, batch, model.output_dim(), dout, grad_scale);
}

Evaluation evaluate(nn::Model& model, const data::Dataset& data, comm::Communicator& comm,
                    std::int64_t eval_batch) {
  const int K = comm.size(), r = comm.rank();
  const std::int64_t mine = data.n > r ? (data.n - r + K - 1) / K : 0;
  AlignedBuffer x(
      static_cast<std::size_t>(std::min(eval_batch, std::max<std::int64_t>(mine, 1)) * data.dim));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(eval_batch));
  AlignedBuffer targets(
      static_cast<std::size_t>(eval_batch * std::max<std::int64_t>(data.target_dim, 1)));
  double sums[3] = {0.0, 0.0, 0.0};  // loss, correct, count
  for (std::int64_t start = 0; start < mine; start += eval_batch) {
    const std::int64_t b = std::min(eval_batch, mine - start);
    for (std::int64_t j = 0; j < b; ++j) {
      data.copy_example(r + (start + j) * K, j, x.data(), labels.data(), targets.data());
    }
    const float* out = model.forward(x.data(), b, false);
    std::int64_t correct = 0;
    sums[0] +=
        batch_loss(model, out, data, labels.data(), targets.data(), b, 0.0f, false, &correct);
    sums[1] += static_cast<double>(correct);
    sums[2] += static_cast<double>(b);
  }
  comm.allreduce(std::span<double>(sums, 3), comm::ReduceOp::kSum);
  Evaluation e;
  e.count = static_cast<std::int64_t>(sums[2]);
  if (e.count > 0) {
    e.loss = sums[0] / sums[2];
    e.accuracy = data.is_classification() ? sums[1] / sums[2] : 0.0;
  }
  return e;
}

}  // namespace lbt::trainer
