// batch_loss and evaluate; see evaluation.hpp and loop.hpp.
#include "trainer/evaluation.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "nn/backend.hpp"
#include "trainer/loop.hpp"

namespace lbt::trainer {

// Sum of per-example losses of one batch, and (optionally) d(loss)/d(output) * grad_scale
// into the model's output-gradient buffer. correct: argmax hits (classification).
double batch_loss(nn::Model& model, const float* out, const data::Dataset& data,
                  const std::int32_t* labels, const float* targets, std::int64_t batch,
                  float grad_scale, bool want_grad, std::int64_t* correct) {
  float* dout = want_grad ? model.output_grad() : nullptr;
  if (data.is_classification()) {
    return model.backend().softmax_cross_entropy(out, labels, batch, model.output_dim(), dout,
                                                 grad_scale, correct);
  }
  if (correct) *correct = 0;
  return model.backend().half_squared_error(out, targets, batch, model.output_dim(), dout,
                                            grad_scale);
}

namespace {

// The evaluation's sums, added over the ranks: the loss, the argmax hits, the examples, the
// squares of each example's loss and (regression) of its mean squared error, then per output
// j < k: SSE_j, sum y_j, sum y_j^2 (for mse and R^2).
enum Sum { kLoss, kCorrect, kCount, kLossSquares, kMseSquares, kPerOutput };

void add_regression_sums(const float* out, const float* targets, std::int64_t batch, std::int64_t k,
                         const std::vector<double>& means, double* sums,
                         std::vector<double>& squared_errors,
                         std::vector<double>& squared_deviations) {
  double* per_output = sums + kPerOutput;
  for (std::int64_t i = 0; i < batch; ++i) {
    double sse = 0.0;  // this example's
    for (std::int64_t j = 0; j < k; ++j) {
      const double y = targets[i * k + j], err = static_cast<double>(out[i * k + j]) - y;
      squared_errors.push_back(err * err);
      squared_deviations.push_back((y - means[j]) * (y - means[j]));
      sse += err * err;
      per_output[3 * j] += err * err;
      per_output[3 * j + 1] += y;
      per_output[3 * j + 2] += y * y;
    }
    const double loss = 0.5 * sse, mse = sse / static_cast<double>(k);  // half_squared_error's
    sums[kLossSquares] += loss * loss;
    sums[kMseSquares] += mse * mse;
  }
}

// Each output's mean over the whole split (every rank holds it), for the examples' squared
// deviations in R^2's standard deviation.
std::vector<double> target_means(const data::Dataset& data) {
  const std::int64_t k = data.target_dim;
  std::vector<double> mean(static_cast<std::size_t>(k), 0.0);
  for (std::int64_t i = 0; i < data.n; ++i)
    for (std::int64_t j = 0; j < k; ++j) mean[j] += data.targets[i * k + j];
  for (double& m : mean) m /= static_cast<double>(std::max<std::int64_t>(data.n, 1));
  return mean;
}

// R^2 = 1 - (1/k) sum_j A_j / B_j, A_j and B_j the means over the examples of a_ij = err_ij^2
// and b_ij = (y_ij - ybar_j)^2. Its linearisation at example i (the delta method for a ratio of
// means) is psi_i = -(1/k) sum_j (a_ij - (A_j / B_j) b_ij) / B_j, whose mean is 0; returns
// this rank's sum of psi_i^2 over its examples' (a, b), stored k to an example. Outputs with
// no spread (B_j = 0) have a fixed R^2_j and add nothing.
double linearised_squares(const std::vector<double>& a, const std::vector<double>& b,
                          const double* per_output, std::int64_t k, double n) {
  std::vector<double> ratio(static_cast<std::size_t>(k)), spread(static_cast<std::size_t>(k));
  for (std::int64_t j = 0; j < k; ++j) {
    const double sse = per_output[3 * j], sum_y = per_output[3 * j + 1];
    spread[j] = (per_output[3 * j + 2] - sum_y * sum_y / n) / n;
    ratio[j] = spread[j] > 0.0 ? sse / n / spread[j] : 0.0;
  }
  double squares = 0.0;
  for (std::size_t i = 0; i < a.size(); i += static_cast<std::size_t>(k)) {
    double psi = 0.0;
    for (std::int64_t j = 0; j < k; ++j)
      if (spread[j] > 0.0) psi += (a[i + j] - ratio[j] * b[i + j]) / spread[j];
    psi /= static_cast<double>(k);
    squares += psi * psi;
  }
  return squares;
}

// mse and R^2 from the reduced sums (n examples). R^2 of an output that does not vary over the
// split (SST_j = 0: a constant target, or one example) is undefined, and so is their average:
// NaN, written null (sklearn's force_finite scores it 0 or 1, which lbt printed as
// "0.0000 [0.0000, 0.0000]": 2026-11-29 audit).
void regression_metrics(const double* sums, std::int64_t k, double n, Evaluation& e) {
  double sse_total = 0.0, r2_total = 0.0;
  for (std::int64_t j = 0; j < k; ++j) {
    const double sse = sums[3 * j], sum_y = sums[3 * j + 1], sum_y2 = sums[3 * j + 2];
    const double sst = sum_y2 - sum_y * sum_y / n;
    sse_total += sse;
    r2_total += sst > 0.0 ? 1.0 - sse / sst : NAN;
  }
  e.mse = sse_total / (n * static_cast<double>(k));
  e.r2 = r2_total / static_cast<double>(k);
}

}  // namespace

double Evaluation::metric(const std::string& name) const {
  if (name == "val_loss") return loss;
  if (name == "val_accuracy") return accuracy;
  if (name == "val_mse") return mse;
  if (name == "val_r2") return r2;
  return kNotMeasured;
}

Evaluation evaluate(nn::Model& model, const data::Dataset& data, comm::Communicator& comm,
                    std::int64_t eval_batch) {
  const int K = comm.size(), r = comm.rank();
  const std::int64_t mine = data.n > r ? (data.n - r + K - 1) / K : 0;
  const std::int64_t k = data.is_classification() ? 0 : data.target_dim;
  AlignedBuffer x(
      static_cast<std::size_t>(std::min(eval_batch, std::max<std::int64_t>(mine, 1)) * data.dim));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(eval_batch));
  AlignedBuffer targets(
      static_cast<std::size_t>(eval_batch * std::max<std::int64_t>(data.target_dim, 1)));
  std::vector<double> sums(static_cast<std::size_t>(kPerOutput + 3 * k), 0.0);
  std::vector<double> row_losses(static_cast<std::size_t>(k == 0 ? eval_batch : 0));
  const std::vector<double> means = k > 0 ? target_means(data) : std::vector<double>{};
  // regression: each of this rank's examples' err^2 and (y - ybar)^2, k apiece
  std::vector<double> squared_errors, squared_deviations;
  squared_errors.reserve(static_cast<std::size_t>(mine * k));
  squared_deviations.reserve(static_cast<std::size_t>(mine * k));
  for (std::int64_t start = 0; start < mine; start += eval_batch) {
    const std::int64_t b = std::min(eval_batch, mine - start);
    for (std::int64_t j = 0; j < b; ++j) {
      data.copy_example(r + (start + j) * K, j, x.data(), labels.data(), targets.data());
    }
    const float* out = model.forward(x.data(), b, false);
    if (k == 0) {
      std::int64_t correct = 0;
      sums[kLoss] += model.backend().softmax_cross_entropy(
          out, labels.data(), b, model.output_dim(), nullptr, 0.0f, &correct, row_losses.data());
      for (std::int64_t j = 0; j < b; ++j) sums[kLossSquares] += row_losses[j] * row_losses[j];
      sums[kCorrect] += static_cast<double>(correct);
    } else {
      sums[kLoss] += batch_loss(model, out, data, nullptr, targets.data(), b, 0.0f, false, nullptr);
      add_regression_sums(out, targets.data(), b, k, means, sums.data(), squared_errors,
                          squared_deviations);
    }
    sums[kCount] += static_cast<double>(b);
  }
  comm.allreduce(std::span<double>(sums), comm::ReduceOp::kSum);
  if (k == 0)
    return classification_evaluation(
        {sums[kLoss], sums[kCorrect], sums[kCount], sums[kLossSquares]});
  Evaluation e;
  e.regression = true;
  e.count = static_cast<std::int64_t>(sums[kCount]);
  if (e.count > 0) {
    e.loss = sums[kLoss] / sums[kCount];
    regression_metrics(sums.data() + kPerOutput, k, sums[kCount], e);
    e.loss_sd = sample_sd(sums[kLoss], sums[kLossSquares], sums[kCount]);
    e.mse_sd = sample_sd(e.mse * sums[kCount], sums[kMseSquares], sums[kCount]);
  }
  // Every rank takes part, as in the allreduce above (the count is the same on all).
  double squares = linearised_squares(squared_errors, squared_deviations, sums.data() + kPerOutput,
                                      k, std::max(sums[kCount], 1.0));
  comm.allreduce(std::span<double>(&squares, 1), comm::ReduceOp::kSum);
  if (e.count >= 2 && std::isfinite(e.r2)) e.r2_sd = std::sqrt(squares / (sums[kCount] - 1.0));
  return e;
}

Interval95 accuracy_interval(double accuracy, std::int64_t n) {
  if (n <= 0 || !std::isfinite(accuracy)) return {NAN, NAN};
  const double z = 1.959963984540054, z2 = z * z, count = static_cast<double>(n);
  const double centre = (accuracy + z2 / (2 * count)) / (1 + z2 / count);
  const double half = z / (1 + z2 / count) *
                      std::sqrt(accuracy * (1 - accuracy) / count + z2 / (4 * count * count));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

Interval95 r2_interval(double r2, double sd, std::int64_t n) {
  if (n < 2 || !std::isfinite(r2) || !std::isfinite(sd)) return {NAN, NAN};
  const double half = 1.959963984540054 * sd / std::sqrt(static_cast<double>(n));
  return {r2 - half, std::min(1.0, r2 + half)};
}

Interval95 mean_interval(double mean, double sd, std::int64_t n) {
  if (n < 2 || !std::isfinite(mean) || !std::isfinite(sd)) return {NAN, NAN};
  const double half = 1.959963984540054 * sd / std::sqrt(static_cast<double>(n));
  return {std::max(0.0, mean - half), mean + half};
}

double sample_sd(double sum, double squares, double n) {
  if (!(n >= 2.0)) return NAN;
  return std::sqrt(std::max(0.0, (squares - sum * sum / n) / (n - 1.0)));
}

ExampleRange contiguous_share(std::int64_t n, int rank, int ranks) {
  return {n * rank / ranks, n * (rank + 1) / ranks};
}

Evaluation classification_evaluation(const ClassificationSums& sums) {
  Evaluation e;
  e.count = static_cast<std::int64_t>(sums.count);
  e.accuracy = 0.0;  // an empty split reads 0, as it always has
  if (e.count > 0) {
    e.loss = sums.loss / sums.count;
    e.accuracy = sums.correct / sums.count;
    e.loss_sd = sample_sd(sums.loss, sums.loss_squares, sums.count);
  }
  return e;
}

}  // namespace lbt::trainer
