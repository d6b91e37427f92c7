// The `model.*`, `data.*` and `train.*` config keys, read and validated in one place, and the
// batch layout global_batch = world_size x micro_batch x accum_steps resolved from them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "nn/layer_options.hpp"
#include "nn/layer_spec.hpp"
#include "trainer/adaptive_batch.hpp"
#include "trainer/divergence.hpp"
#include "trainer/local_sgd.hpp"

namespace lbt::trainer {

// A stop/score condition such as "val_accuracy>=0.88", "val_loss<=0.35" (any task) or
// "val_mse<=0.1", "val_r2>=0.9" (regression).
struct Target {
  std::string metric;  // val_accuracy | val_loss | val_mse | val_r2
  bool at_least = true;
  double value = 0.0;
  bool enabled() const { return !metric.empty(); }
  // `measured`: this evaluation's value of `metric` (NaN, never measured, is never met).
  bool met(double measured) const;
  std::string text() const;
  bool for_classification_only() const { return metric == "val_accuracy"; }
  bool for_regression_only() const { return metric == "val_mse" || metric == "val_r2"; }
};
Target parse_target(const std::string& text);  // "" -> disabled; throws ConfigError

// The values a target's metric takes: accuracy [0, 1], losses and MSE [0, inf), R^2 (-inf, 1].
struct MetricRange {
  double low, high;
  std::string text;  // "[0, 1]"
  bool holds(double v) const { return v >= low && v <= high; }
};
MetricRange metric_range(const std::string& metric);

// How steps-to-target reads the metric (train.target_definition; target_reading.hpp).
enum class TargetDefinition { kEma = 0, kFirstPassage = 1 };

struct DataConfig {
  std::string dataset;  // fashion-mnist | mnist | cifar10 | synthetic-regression | any name
  std::string format;   // idx | cifar10 | npy | csv (derived from dataset when empty)
  std::string path;     // directory of IDX files or of CIFAR-10 batches
  // npy: features and labels files; csv: train_features/test_features are whole CSV files.
  std::string train_features, train_labels, test_features, test_labels;
  std::string label_column = "label", csv_header = "auto";
  std::vector<std::string> target_columns;  // csv regression: target columns (names or indices)
  std::vector<std::int64_t> image_shape;    // reshape flat examples, e.g. {1, 28, 28}
  std::int64_t num_classes = 0;             // npy/csv: 0 = max label + 1
  // Augmentation of training micro-batches (images [C, H, W]), off by default.
  std::int64_t augment_crop_padding = 0;  // random crop of the image padded by this many pixels
  bool augment_flip = false;              // random horizontal flip
  std::int64_t validation_size = 0;
  std::int64_t train_limit = 0;  // use only the first N training examples (0: all)
  bool normalize = true;
  // synthetic-regression (noise tests): y = x.w* + N(0, noise^2), x ~ N(0, I_dim)
  std::int64_t synthetic_examples = 0, synthetic_dim = 0;
  double synthetic_noise = 0.0;
};

struct TrainConfig {
  std::string model_spec;                   // "" when the config lists layers
  std::vector<nn::LayerSpec> model_layers;  // [[model.layers]]; empty: model_spec
  // "model.spec 'mlp:784-10'" or "model.layers": what error messages call the model.
  std::string model_name() const {
    return model_layers.empty() ? "model.spec '" + model_spec + "'" : "model.layers";
  }
  // auto | cross_entropy | mse; checked against the loaded data by check_task (task.hpp).
  // mse is 1/2 sum_j (pred_j - y_j)^2 per example, averaged over examples.
  std::string loss = "auto";
  std::string device = "cpu";  // model.device: cpu | cuda (trainer/device_support.hpp)
  nn::InitScheme init = nn::InitScheme::kHe;
  DataConfig data;
  std::int64_t global_batch = 0, micro_batch = 0, accum_steps = 0;  // resolved
  std::int64_t steps = 0;  // budget in optimizer steps (0: use epochs)
  double epochs = 0.0;     // budget in epochs when steps == 0
  std::int64_t eval_every = 0, log_every = 0, eval_batch = 0;
  std::uint64_t seed = 0;
  std::int64_t order_seed = -1;  // the sampler's seed; -1: seed (train.order_seed)
  std::string branch_from;       // a checkpoint of another run to branch from ("" none)
  std::uint64_t data_order_seed() const {
    return order_seed >= 0 ? static_cast<std::uint64_t>(order_seed) : seed;
  }
  int threads = 0;  // per rank; 0: cores / local ranks
  Target target;
  bool stop_at_target = false;
  double eval_growth = 1.0;         // > 1: geometric evaluation steps (EvalSchedule)
  double target_resolution = 0.05;  // refine the crossing to hi - lo <= this x hi (0: 1 step)
  TargetDefinition target_definition = TargetDefinition::kEma;
  double ema_horizon = 0.1;        // the weights' EMA time constant / the step (target_reading.hpp)
  double target_band = 0.01;       // the refinement starts this fraction of the target short of it
  std::int64_t prune_at_step = 0;  // > 0: stop as "pruned" when the target is unmet here
  DivergenceOptions divergence;    // when a step is a spike, and whether spikes are skipped
  std::int64_t checkpoint_every = 0;        // steps between checkpoints (0: none but the final one)
  double checkpoint_every_seconds = 300.0;  // wall time between checkpoints (0: off)
  int checkpoint_keep = 2;
  bool checkpoint_final = true;
  LocalSgdOptions local_sgd;  // train.sync_every, train.post_local_after (local_sgd.hpp)
  // train.batch_schedule = "adaptive" (adaptive_batch.hpp); global_batch, micro_batch and
  // accum_steps above are then the starting layout at batch_min.
  AdaptiveBatchOptions adaptive;
  bool overlap_comm = false;      // bucketed gradient allreduce during backward
  std::size_t bucket_floats = 0;  // train.bucket_mb in floats, a multiple of 16
};

// Reads and validates; `world_size` resolves and checks the batch layout on every rank, before
// any collective, so an impossible combination never leaves one rank hanging.
TrainConfig read_train_config(Config& config, int world_size);

}  // namespace lbt::trainer
