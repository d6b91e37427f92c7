// The model/data/train/comm key table; see train_keys.hpp.
#include "trainer/config/train_keys.hpp"

#include "core/config.hpp"
#include "nn/layer_fields.hpp"

namespace lbt::trainer {

std::string data_format_of(const Config& config) {
  const std::string format = config.peek_string("data.format", "");
  if (!format.empty()) return format;
  const std::string dataset = config.peek_string("data.dataset", "fashion-mnist");
  if (dataset == "fashion-mnist" || dataset == "mnist") return "idx";
  if (dataset == "cifar10") return "cifar10";
  if (dataset == "synthetic-regression") return "synthetic";
  return "";
}

namespace {

std::vector<std::string> data_format(const Config& config) {
  return {data_format_of(config)};
}
const KeyCondition kByFormat{{"data.format", "data.dataset"}, data_format};

// The synthetic keys follow data.dataset alone: "synthetic" is no data.format a config can name,
// and --help's "(only: data.format = synthetic)" named one.
std::vector<std::string> dataset_name(const Config& config) {
  return {config.peek_string("data.dataset", "fashion-mnist")};
}
const KeyCondition kByDataset{{"data.dataset"}, dataset_name};

std::vector<std::string> divergence_mode(const Config& config) {
  return {config.peek_string("train.on_divergence", "stop")};
}
const KeyCondition kByDivergence{{"train.on_divergence"}, divergence_mode};

// The adaptive batch's keys apply to it alone: set beside a fixed batch they were ignored
// without a word, so forgetting batch_schedule trained a fixed batch (2026-11-29 audit).
std::vector<std::string> batch_schedule(const Config& config) {
  return {config.peek_string("train.batch_schedule", "fixed")};
}
const KeyCondition kByBatchSchedule{{"train.batch_schedule"}, batch_schedule};

// The bucket size is train.overlap_comm's: set without it, it was dropped without a word, and
// lbt scaling --compare train.bucket_mb=1,4,25 compared identical runs (2026-11-29 audit).
std::vector<std::string> overlap(const Config& config) {
  return {config.peek_bool("train.overlap_comm", false) ? "true" : "false"};
}
const KeyCondition kByOverlap{{"train.overlap_comm"}, overlap};

// model.*: the network, its initialisation and loss.
std::vector<KeySpec> model_keys() {
  using enum KeyType;
  // clang-format off
  return {
      {"model.spec", kString, "\"mlp:784-512-512-10\"",
       "mlp:IN-H1-...-OUT | linear:IN-OUT | logistic:IN-CLASSES | cnn:simple[-CLASSES] | resnet:N[-CLASSES], each optionally :nobias (docs/training.md, section Models)"},
      {"model.layers", kTableList, "[]",
       "[[model.layers]] tables instead of model.spec (docs/training.md, section Models), type = " + nn::layer_types_text()},
      {"model.init", kString, "\"he\"",
       "Linear and Conv2d weights: he N(0, 2/fan_in) | glorot U(+-sqrt(6/(fan_in+fan_out))) | zero; biases 0 (PyTorch's default differs: docs/training.md, section Models)",
       {"he", "glorot", "zero"}},
      {"model.loss", kString, "\"auto\"",
       "auto: cross_entropy for integer labels, mse for float targets | cross_entropy | mse "
       "(per example 1/2 sum_j (pred_j - y_j)^2, averaged over examples)",
       {"auto", "cross_entropy", "mse"}},
      {"model.device", kString, "\"cpu\"",
       "where the steps run: cpu | cuda (an NVIDIA GPU per rank, or ranks sharing one; linear, "
       "relu, conv, pool, batchnorm and residual layers, e.g. an MLP, cnn:simple or resnet:N; "
       "run by lbt-cuda; docs/gpu.md)",
       {"cpu", "cuda"}},
  };
  // clang-format on
}

// data.*: the dataset, its files or synthetic problem, the split, augmentation.
std::vector<KeySpec> data_keys() {
  using enum KeyType;
  const KeyCondition* format = &kByFormat;
  const KeyCondition* dataset = &kByDataset;
  // clang-format off
  return {
      {"data.dataset", kString, "\"fashion-mnist\"",
       "fashion-mnist | mnist | cifar10 | synthetic-regression, or a name for npy/csv data (with data.format)"},
      {"data.format", kString, "\"\"", "idx | cifar10 | npy | csv (empty: from data.dataset)",
       {"", "idx", "cifar10", "npy", "csv"}},
      {"data.path", kString, "\"/usr/share/datasets/fashion-mnist\"",
       "directory with train-images-idx3-ubyte[.gz] and friends (idx), or the extracted cifar-10-batches-bin (cifar10; lbt never downloads)",
       {}, "", format, {"idx", "cifar10"}, {{"cifar10", "\"cifar-10-batches-bin\""}}},
      {"data.validation_size", kInt, "10000",
       "examples held out of the training set for validation", {}, "examples"},
      {"data.train_limit", kInt, "0",
       "use only the first N training examples before the split (0: all; more than the data "
       "holds is a data error)",
       {},
       "examples"},
      {"data.normalize", kBool, "true",
       "standardise inputs with train-split mean/std (per channel for images)"},
      {"data.augment.crop_padding", kInt, "0",
       "images: random crop after padding the normalised image by N pixels of 0, the training mean (0: off)", {}, "pixels"},
      {"data.augment.flip", kBool, "false", "images: random horizontal flip"},
      {"data.train_features", kString, "\"\"", "npy: features [n, ...]; csv: the training CSV file",
       {}, "", format, {"npy", "csv"}},
      {"data.test_features", kString, "\"\"", "npy: test features; csv: test CSV file (optional)",
       {}, "", format, {"npy", "csv"}},
      {"data.train_labels", kString, "\"\"", "npy: integer class labels [n], or float32/float64 regression targets [n] or [n, k]", {}, "", format, {"npy"}},
      {"data.test_labels", kString, "\"\"", "npy: test labels (with data.test_features)", {}, "",
       format, {"npy"}},
      {"data.label_column", kString, "\"label\"", "csv: label column, header name or 0-based index",
       {}, "", format, {"csv"}},
      {"data.target_columns", kStringList, "[]",
       "csv: regression target columns, header names or 0-based indices as strings, e.g. "
       "[\"y\"] or [\"3\", \"4\"] (empty: classification on data.label_column)",
       {}, "", format, {"csv"}},
      {"data.csv_header", kString, "\"auto\"", "csv: whether the first row is a header",
       {"auto", "true", "false"}, "", format, {"csv"}},
      {"data.num_classes", kInt, "0", "npy/csv: number of classes (0: max label + 1)", {}, "",
       format, {"npy", "csv"}},
      {"data.image_shape", kString, "\"\"",
       "npy/csv: per-example shape C,H,W for image models (empty: as stored)", {}, "", format,
       {"npy", "csv"}},
      {"data.synthetic.examples", kInt, "65536", "examples to draw", {}, "examples", dataset,
       {"synthetic-regression"}},
      {"data.synthetic.dim", kInt, "32", "input dimension d", {}, "", dataset,
       {"synthetic-regression"}},
      {"data.synthetic.noise", kNumber, "0.5", "label noise standard deviation s", {}, "", dataset,
       {"synthetic-regression"}},
  };
  // clang-format on
}

// train.*: batch, length, evaluation, seed and target of the run.
std::vector<KeySpec> run_keys() {
  using enum KeyType;
  // clang-format off
  return {
      {"train.global_batch", kInt, "128",
       "examples per optimizer step, summed over ranks and accumulation", {}, "examples"},
      {"train.micro_batch", kInt, "0", "examples per forward/backward on one rank (0: derived)", {},
       "examples"},
      {"train.accum_steps", kInt, "0",
       "gradient accumulation steps per optimizer step (0: derived)"},
      {"train.batch_schedule", kString, "\"fixed\"",
       "fixed: train.global_batch throughout | adaptive: the global batch follows the EMA noise scale B_simple (per_example's where resolved, else two_batch's; McCandlish et al. 2018, arXiv:1812.06162, App. D): B = clip(B_simple, batch_min, batch_max) rounded to ranks x micro_batch x k, starting at batch_min until B_simple is resolved, changed at noise reports when B_simple moves past train.batch_hysteresis plus half a realisable step; needs noise.enabled; the LR follows schedule.scaling at B (reference schedule.reference_batch), the schedule and the budget (train.steps x batch_min, or train.epochs) are counted in examples (the last step may pass the budget by less than its batch); metrics.jsonl logs global_batch; steps-to-target is not refined (train.target_resolution unused) | steps: a planned piecewise-constant batch, train.batch_steps (a batch warmup; lbt plan --from CBS_DIR writes one), counted in examples as adaptive is and with the same LR rule; steps-to-target is refined as with a fixed batch",
       {"fixed", "adaptive", "steps"}},
      {"train.batch_steps", kString, "\"\"",
       "steps: the stages FROM_EXAMPLES:BATCH, ... (e.g. 0:256, 51200:512): the global batch of the steps taken once FROM_EXAMPLES examples are seen (a stage starts at the first step boundary at or after it); the first at 0; train.steps counts steps of the first stage's batch (the budget is train.steps x that batch examples), every batch a multiple of ranks x micro_batch (micro_batch 0: the smallest batch / ranks) and at most the training set",
       {}, "examples", &kByBatchSchedule, {"steps"}},
      {"train.batch_min", kInt, "0",
       "adaptive: the smallest global batch, a multiple of ranks x micro_batch (micro_batch 0: batch_min / ranks)",
       {}, "examples", &kByBatchSchedule, {"adaptive"}},
      {"train.batch_max", kInt, "0", "adaptive: the largest global batch, a multiple of ranks x micro_batch and at most the training set", {}, "examples", &kByBatchSchedule, {"adaptive"}},
      {"train.batch_rule", kString, "\"b_simple\"",
       "adaptive: b_simple: B = B_simple | sqrt: B = sqrt(train.batch_sqrt_scale x B_simple), the batch that minimises steps + examples / batch_sqrt_scale under McCandlish's per-step model (App. D); either is then clipped to [batch_min, batch_max] and rounded to the layout",
       {"b_simple", "sqrt"}, "", &kByBatchSchedule, {"adaptive"}},
      {"train.batch_sqrt_scale", kNumber, "0.0",
       "adaptive, batch_rule = sqrt: B0, the examples one is willing to spend to save a step (B = B_simple where B_simple = B0); required > 0 with the sqrt rule",
       {}, "examples", &kByBatchSchedule, {"adaptive"}},
      {"train.batch_hysteresis", kNumber, "0.1",
       "adaptive: change the batch only when the rule's batch differs from the current one by more than this fraction of it plus half a realisable step (ranks x micro_batch / 2)", {}, "", &kByBatchSchedule, {"adaptive"}},
      {"train.steps", kInt, "0", "step budget (0: use train.epochs)", {}, "steps"},
      {"train.epochs", kNumber, "10.0", "epoch budget when train.steps = 0", {}, "epochs"},
      {"train.eval_every", kInt, "500",
       "evaluate on validation every N steps (with eval_growth > 1: at least N steps apart); with a target not yet met, on the reading's grid (the first step of it at or after, train.target_resolution)", {},
       "steps"},
      {"train.eval_growth", kNumber, "1.0",
       "1: evaluate every eval_every steps; g > 1: geometrically, the next evaluation after step s at s + max(eval_every, ceil((g - 1) s))"},
      {"train.log_every", kInt, "50", "append to metrics.jsonl every N steps", {}, "steps"},
      {"train.eval_batch", kInt, "2000", "examples per evaluation forward pass", {}, "examples"},
      {"train.seed", kInt, "0", "seed for init, split and sampling"},
      {"train.order_seed", kInt, "-1",
       "seed of the data order alone (the sampler's epoch permutations; -1: train.seed): lbt cbs's branches vary it to measure the spread of a continuation without changing the data or the model"},
      {"train.branch_from", kString, "\"\"",
       "a checkpoint (RUN/checkpoints/step_N.ckpt) of another run to branch from (lbt cbs, Merrill et al. 2025): parameters, optimizer state and layer buffers are that run's at step N, the loop continues from step N, and the LR is that run's schedule at the same data position (step N + j x k at this run's step N + j, k = train.global_batch / its batch, an integer) times schedule.scaling from its batch to this one; train.steps counts from 0 as usual (\"\": a run of its own)"},
      {"train.threads", kInt, "0", "compute threads per rank (0: the cores this process may use, at most the machine's cores / its ranks)"},
      {"train.target", kString, "\"\"",
       "METRIC>=VALUE or METRIC<=VALUE, e.g. val_accuracy>=0.88 (classification), val_mse<=0.1 or val_r2>=0.9 (regression), val_loss<=0.35: records steps to reach it"},
      {"train.stop_at_target", kBool, "false", "end the run when the target is met: once both readings (train.target_definition's and the other, which summary.json records) have met it, or at twice the definition's steps"},
      {"train.target_resolution", kNumber, "0.05",
       "steps-to-target is the first step meeting the target on a grid fixed from step 0, s + max(1, floor(r (s + 1))), the same at any evaluation cadence; its bracket (steps_lo, steps_hi] is at most this fraction of steps_hi, found by replaying from the last evaluation clearly below the target (0: every step, the exact step; 1: no refinement, the cadence's own evaluations)"},
      {"train.target_definition", kString, "\"ema\"",
       "how steps-to-target reads the metric (summary.json, sweep.csv, best.csv and fit.json name it) | ema: the first step at which an exponential moving average of the weights (time constant train.ema_horizon x the step) meets the target, as Zhang et al. 2024 (arXiv:2410.21676) read it: the average removes the SGD noise that makes the raw metric hover around a target near its plateau, so the step does not depend on how often one looks | first_passage: Shallue et al. 2019's first evaluated step of the raw weights meeting the target; either way both readings are evaluated and recorded (summary.json readings), and with train.stop_at_target the run ends when both have met (or at twice the definition's steps)",
       {"ema", "first_passage"}},
      {"train.ema_horizon", kNumber, "0.1",
       "the weights' EMA time constant as a fraction of the steps so far: after step t it moves by min(1, dt / (h t)) towards the weights (polynomial-decay averaging, the same share of the run at every batch size); in (0, 0.5], and h x the run's steps >= 2 with the ema reading (a shorter average cannot resolve the run: checked by --check when train.steps is set, else when the run starts)"},
      {"train.target_band", kNumber, "0.01",
       "the refinement replays from the last evaluation short of the target by more than this fraction of its value, so a crossing inside the band before the last below-target evaluation is found too (0: from the last below-target evaluation)"},
      {"train.prune_at_step", kInt, "0",
       "end the run as 'pruned' at its first evaluation at or after this step whose metric is clearly below the target (outside train.target_band; no evaluation is added: the run's readings are an unpruned run's, and its crossing could only come later; a run that meets the target past this step stops at its reading, without waiting for the other one); the schedule still spans train.steps (lbt sweep: the best steps-to-target at the batch size; 0: never)",
       {}, "steps"},
  };
  // clang-format on
}

// train.*: divergence handling and checkpoints; comm.*: the communicator.
std::vector<KeySpec> guard_keys() {
  using enum KeyType;
  // clang-format off
  return {
      {"train.divergence_factor", kNumber, "20.0",
       "a spike: loss > factor (>= 1) x the first step's loss, at least the untrained model's mean over 256 training examples (or NaN/Inf)"},
      {"train.on_divergence", kString, "\"stop\"",
       "stop: a spike ends the run as diverged | skip: drop its update", {"stop", "skip"}},
      {"train.skip_limit", kInt, "5", "spikes in a row before the run counts as diverged", {}, "",
       &kByDivergence, {"skip"}},
      {"train.checkpoint_every", kInt, "0",
       "write RUN/checkpoints/step_N.ckpt every N steps (0: never)", {}, "steps"},
      {"train.checkpoint_every_seconds", kNumber, "300.0",
       "also write a checkpoint after the first step ending this long after the last one, so a "
       "crash loses at most this much work (0: off)", {}, "seconds"},
      {"train.checkpoint_keep", kInt, "2", "checkpoints kept"},
      {"train.checkpoint_final", kBool, "true", "write a checkpoint when the run ends"},
      {"train.sync_every", kInt, "1",
       "local SGD (Lin et al. 2020, arXiv:1808.07217): in the local phase each rank steps with its own mean gradient (no gradient allreduce; metrics.jsonl's grad_norm is the RMS of the ranks' norms) and parameters and optimizer state are averaged over ranks after every step that is a multiple of H, and after the last; evaluations move to the next average, checkpoints and signals wait for it; checkpoint_every must be a multiple of H; the noise scale is measured in the synchronous phase only (1: synchronous data parallel)",
       {}, "steps"},
      {"train.post_local_after", kInt, "0",
       "post-local SGD: the first S steps are synchronous data parallel, local SGD (train.sync_every > 1) after them (Lin et al. switch at the first LR decay)",
       {}, "steps"},
      {"train.overlap_comm", kBool, "false",
       "reduce the gradient in buckets during backward, each started as soon as backward has finished it (MPI with every rank on one node: the shared-memory reducer on a reducing thread); parameters are bit for bit those of the non-overlapped reduction; not with the noise scale"},
      {"train.bucket_mb", kNumber, "1.0",
       "train.overlap_comm: bucket size in MiB (2^20 bytes), rounded down to the 64-byte segment alignment", {}, "MiB",
       &kByOverlap, {"true"}},
      {"comm.backend", kString, "\"auto\"", "auto: MPI when launched by mpirun/srun",
       {"auto", "local", "mpi"}},
  };
  // clang-format on
}

}  // namespace

const std::vector<KeySpec>& train_keys() {
  // One table, in the order --help lists it: model, data, train, comm.
  static const std::vector<KeySpec> keys = [] {
    std::vector<KeySpec> all;
    for (auto part : {model_keys(), data_keys(), run_keys(), guard_keys()})
      all.insert(all.end(), std::make_move_iterator(part.begin()),
                 std::make_move_iterator(part.end()));
    return all;
  }();
  return keys;
}

const KeySpec& train_key(std::string_view name) {
  return Schema::in(train_keys(), name);
}

}  // namespace lbt::trainer
