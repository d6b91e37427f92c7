// Training config; see train_config.hpp.
#include "trainer/train_config.hpp"

#include <cmath>
#include <sstream>
#include <thread>

#include "core/error.hpp"

namespace lbt::trainer {

bool Target::met(double accuracy, double loss) const {
  const double v = metric == "val_accuracy" ? accuracy : loss;
  return at_least ? v >= value : v <= value;
}

std::string Target::text() const {
  if (!enabled()) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%s%g", metric.c_str(), at_least ? ">=" : "<=", value);
  return buf;
}

Target parse_target(const std::string& text) {
  Target t;
  if (text.empty() || text == "none") return t;
  const auto ge = text.find(">="), le = text.find("<=");
  const auto op = ge != std::string::npos ? ge : le;
  auto bad = [&]() -> Target {
    throw ConfigError("train.target '" + text + "' is not METRIC>=VALUE or METRIC<=VALUE",
                      "e.g. val_accuracy>=0.88 or val_loss<=0.35 (metrics: val_accuracy, val_loss)");
  };
  if (op == std::string::npos) return bad();
  t.metric = text.substr(0, op);
  t.at_least = op == ge;
  try {
    std::size_t used = 0;
    t.value = std::stod(text.substr(op + 2), &used);
    if (used != text.size() - op - 2) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  if (t.metric != "val_accuracy" && t.metric != "val_loss") return bad();
  return t;
}

namespace {

void require_positive(const Config& c, const char* key, double value, const char* hint) {
  if (!(value > 0)) c.fail(key, "> 0", std::to_string(value), hint);
}

}  // namespace

TrainConfig read_train_config(Config& c, int world_size) {
  TrainConfig t;
  t.model_spec = c.get_string("model.spec", "mlp:784-512-512-10",
                              "model: mlp:IN-H1-...-OUT or linear:IN-OUT");
  const std::string init = c.get_string("model.init", "he", "weight init: he | glorot | zero");
  if (init == "he") t.init = nn::InitScheme::kHe;
  else if (init == "glorot") t.init = nn::InitScheme::kGlorot;
  else if (init == "zero") t.init = nn::InitScheme::kZero;
  else c.fail("model.init", "one of: he, glorot, zero", "'" + init + "'");

  DataConfig& d = t.data;
  d.dataset = c.get_string("data.dataset", "fashion-mnist",
                           "fashion-mnist | mnist | cifar10 | synthetic-regression, or a name for "
                           "npy/csv data (with data.format)");
  const bool idx_named = d.dataset == "fashion-mnist" || d.dataset == "mnist";
  d.format = c.get_string("data.format", "",
                          "idx | cifar10 | npy | csv (empty: idx for fashion-mnist/mnist, cifar10 for cifar10)");
  if (d.format.empty()) d.format = idx_named ? "idx" : d.dataset == "cifar10" ? "cifar10" : "";
  d.path = c.get_string("data.path", d.format == "cifar10" ? "cifar-10-batches-bin" : "/usr/share/datasets/fashion-mnist",
                        "directory with train-images-idx3-ubyte[.gz] and friends (idx), or the "
                        "extracted cifar-10-batches-bin (cifar10; lbt never downloads)");
  d.validation_size = c.get_int("data.validation_size", 10000,
                                "examples held out of the training set for validation");
  d.train_limit = c.get_int("data.train_limit", 0,
                            "use only the first N training examples before the split (0: all)");
  d.normalize = c.get_bool("data.normalize", true,
                           "standardise inputs with train-split mean/std (per channel for images)");
  d.augment_crop_padding = c.get_int("data.augment.crop_padding", 0,
                                     "images: random crop after zero-padding by N pixels (0: off)");
  d.augment_flip = c.get_bool("data.augment.flip", false, "images: random horizontal flip");
  if (d.augment_crop_padding < 0) c.fail("data.augment.crop_padding", ">= 0", std::to_string(d.augment_crop_padding));
  if (d.format == "npy" || d.format == "csv") {
    d.train_features = c.get_string("data.train_features", "", "npy: features [n, ...]; csv: the training CSV file");
    d.test_features = c.get_string("data.test_features", "", "npy: test features; csv: test CSV file (optional)");
    if (d.format == "npy") {
      d.train_labels = c.get_string("data.train_labels", "", "npy: integer labels [n]");
      d.test_labels = c.get_string("data.test_labels", "", "npy: test labels (with data.test_features)");
    } else {
      d.label_column = c.get_string("data.label_column", "label", "csv: label column, header name or 0-based index");
      d.csv_header = c.get_string("data.csv_header", "auto", "csv: auto | true | false");
      if (d.csv_header != "auto" && d.csv_header != "true" && d.csv_header != "false") {
        c.fail("data.csv_header", "one of: auto, true, false", "'" + d.csv_header + "'");
      }
    }
    d.num_classes = c.get_int("data.num_classes", 0, "npy/csv: number of classes (0: max label + 1)");
    const std::string shape = c.get_string("data.image_shape", "",
                                           "npy/csv: per-example shape C,H,W for image models (empty: as stored)");
    std::stringstream ss(shape);
    for (std::string item; std::getline(ss, item, ',');) {
      try {
        d.image_shape.push_back(std::stoll(item));
      } catch (const std::exception&) {
        c.fail("data.image_shape", "comma-separated positive sizes such as 1,28,28", "'" + shape + "'");
      }
      if (d.image_shape.back() <= 0) c.fail("data.image_shape", "positive sizes", "'" + shape + "'");
    }
    if (d.train_features.empty()) {
      c.fail("data.train_features", "a path to a ." + d.format + " file", "nothing",
             "set data.train_features" + std::string(d.format == "npy" ? " and data.train_labels" : ""));
    }
    if (d.format == "npy" && d.train_labels.empty()) c.fail("data.train_labels", "a path to a .npy file", "nothing");
    if (d.num_classes < 0) c.fail("data.num_classes", ">= 0", std::to_string(d.num_classes));
  }
  if (d.dataset == "synthetic-regression") {
    d.synthetic_examples = c.get_int("data.synthetic.examples", 65536, "examples to draw");
    d.synthetic_dim = c.get_int("data.synthetic.dim", 32, "input dimension d");
    d.synthetic_noise = c.get_double("data.synthetic.noise", 0.5, "label noise standard deviation s");
  } else if (d.format != "idx" && d.format != "cifar10" && d.format != "npy" && d.format != "csv") {
    if (d.format.empty()) {
      c.fail("data.dataset", "one of: fashion-mnist, mnist, cifar10, synthetic-regression (or set data.format)",
             "'" + d.dataset + "'");
    }
    c.fail("data.format", "one of: idx, cifar10, npy, csv", "'" + d.format + "'");
  }
  if (d.validation_size < 0) c.fail("data.validation_size", ">= 0", std::to_string(d.validation_size));
  if (d.train_limit < 0) c.fail("data.train_limit", ">= 0", std::to_string(d.train_limit));

  t.global_batch = c.get_int("train.global_batch", 128,
                             "examples per optimizer step, summed over ranks and accumulation");
  t.micro_batch = c.get_int("train.micro_batch", 0,
                            "examples per forward/backward on one rank (0: derived)");
  t.accum_steps = c.get_int("train.accum_steps", 0,
                            "gradient accumulation steps per optimizer step (0: derived)");
  t.steps = c.get_int("train.steps", 0, "step budget (0: use train.epochs)");
  t.epochs = c.get_double("train.epochs", 10.0, "epoch budget when train.steps = 0");
  t.eval_every = c.get_int("train.eval_every", 500, "evaluate on validation every N steps");
  t.log_every = c.get_int("train.log_every", 50, "append to metrics.jsonl every N steps");
  t.eval_batch = c.get_int("train.eval_batch", 2000, "examples per evaluation forward pass");
  const std::int64_t seed = c.get_int("train.seed", 0, "seed for init, split and sampling");
  t.threads = static_cast<int>(c.get_int("train.threads", 0, "compute threads per rank (0: cores / ranks)"));
  t.target = parse_target(c.get_string("train.target", "",
                                       "e.g. val_accuracy>=0.88: records steps to reach it"));
  t.stop_at_target = c.get_bool("train.stop_at_target", false, "end the run when the target is met");
  t.divergence.factor = c.get_double("train.divergence_factor", 20.0,
                                     "a spike: loss > factor x first loss (or NaN/Inf)");
  const std::string on_divergence =
      c.get_string("train.on_divergence", "stop",
                   "stop: a spike ends the run as diverged | skip: drop its update");
  t.divergence.skip_spikes = on_divergence == "skip";
  t.divergence.skip_limit = c.get_int(
      "train.skip_limit", 5, "skip mode: spikes in a row before the run counts as diverged");
  t.comm_backend = c.get_string("comm.backend", "auto", "auto | local | mpi");
  t.checkpoint_every = c.get_int("train.checkpoint_every", 0,
                                 "write RUN/checkpoints/step_N.ckpt every N steps (0: never)");
  t.checkpoint_keep = static_cast<int>(c.get_int("train.checkpoint_keep", 2, "checkpoints kept"));
  t.checkpoint_final = c.get_bool("train.checkpoint_final", true,
                                  "write a checkpoint when the run ends");
  if (t.checkpoint_every < 0) c.fail("train.checkpoint_every", ">= 0", std::to_string(t.checkpoint_every));
  if (t.checkpoint_keep < 1) c.fail("train.checkpoint_keep", ">= 1", std::to_string(t.checkpoint_keep));

  if (seed < 0) c.fail("train.seed", ">= 0", std::to_string(seed));
  t.seed = static_cast<std::uint64_t>(seed);
  require_positive(c, "train.global_batch", static_cast<double>(t.global_batch),
                   "e.g. --set train.global_batch=128");
  if (t.micro_batch < 0) c.fail("train.micro_batch", ">= 0 (0: derived)", std::to_string(t.micro_batch));
  if (t.accum_steps < 0) c.fail("train.accum_steps", ">= 0 (0: derived)", std::to_string(t.accum_steps));
  if (t.steps < 0) c.fail("train.steps", ">= 0", std::to_string(t.steps));
  if (t.steps == 0) require_positive(c, "train.epochs", t.epochs, "or set train.steps");
  require_positive(c, "train.eval_every", static_cast<double>(t.eval_every), "e.g. 500");
  require_positive(c, "train.log_every", static_cast<double>(t.log_every), "e.g. 50");
  require_positive(c, "train.eval_batch", static_cast<double>(t.eval_batch), "e.g. 2000");
  if (t.threads < 0) c.fail("train.threads", ">= 0", std::to_string(t.threads));
  require_positive(c, "train.divergence_factor", t.divergence.factor, "e.g. 20");
  if (on_divergence != "stop" && on_divergence != "skip") {
    c.fail("train.on_divergence", "\"stop\" or \"skip\"", "'" + on_divergence + "'");
  }
  if (t.divergence.skip_limit < 1) {
    c.fail("train.skip_limit", ">= 1", std::to_string(t.divergence.skip_limit), "e.g. 5");
  }

  // Resolve global = world x micro x accum; any two fix the third.
  const std::int64_t per_rank_fail = t.global_batch % world_size;
  if (per_rank_fail != 0) {
    c.fail("train.global_batch", "divisible by the number of ranks (" + std::to_string(world_size) + ")",
           std::to_string(t.global_batch),
           "choose a global batch that is a multiple of the world size, or run with another -np");
  }
  const std::int64_t per_rank = t.global_batch / world_size;
  if (t.micro_batch == 0 && t.accum_steps == 0) {
    t.accum_steps = 1;
    t.micro_batch = per_rank;
  } else if (t.micro_batch == 0) {
    if (per_rank % t.accum_steps != 0) {
      c.fail("train.accum_steps", "a divisor of global_batch / ranks = " + std::to_string(per_rank),
             std::to_string(t.accum_steps));
    }
    t.micro_batch = per_rank / t.accum_steps;
  } else {
    if (per_rank % t.micro_batch != 0) {
      c.fail("train.micro_batch",
             "a divisor of global_batch / ranks = " + std::to_string(t.global_batch) + " / " +
                 std::to_string(world_size) + " = " + std::to_string(per_rank),
             std::to_string(t.micro_batch),
             "pick micro_batch so that ranks x micro_batch x accum_steps = global_batch");
    }
    const std::int64_t accum = per_rank / t.micro_batch;
    if (t.accum_steps != 0 && t.accum_steps != accum) {
      c.fail("train.accum_steps", "global_batch / (ranks x micro_batch) = " + std::to_string(accum),
             std::to_string(t.accum_steps), "drop one of micro_batch / accum_steps and let lbt derive it");
    }
    t.accum_steps = accum;
  }
  return t;
}

}  // namespace lbt::trainer
