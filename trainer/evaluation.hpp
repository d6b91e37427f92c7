// The loss of a batch (training and validation share it) and the sharded validation pass.
// `evaluate` is declared in loop.hpp, beside the loop that calls it.
#pragma once
#include <cstdint>

#include "nn/model.hpp"
#include "trainer/data/dataset.hpp"

namespace lbt::trainer {

// Sum of per-example losses of one batch, and (optionally) d(loss)/d(output) * grad_scale
// into the model's output-gradient buffer. correct: argmax hits (classification).
double batch_loss(nn::Model& model, const float* out, const data::Dataset& data,
                  const std::int32_t* labels, const float* targets, std::int64_t batch,
                  float grad_scale, bool want_grad, std::int64_t* correct);

}  // namespace lbt::trainer
