// Training config; see train_config.hpp.
#include "trainer/config/train_config.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "nn/layer_fields.hpp"
#include "trainer/config/data_config.hpp"
#include "trainer/config/train_keys.hpp"
#include "trainer/target_reading.hpp"

namespace lbt::trainer {
bool Target::met(double measured) const {
  return at_least ? measured >= value : measured <= value;
}

std::string Target::text() const {
  if (!enabled()) return "";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%s%g", metric.c_str(), at_least ? ">=" : "<=", value);
  return buf;
}

namespace {

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t"), last = s.find_last_not_of(" \t");
  return first == std::string::npos ? "" : s.substr(first, last - first + 1);
}

// A threshold outside the metric's range is never met: the run would train its whole budget
// and report the target unreached.
void refuse_unreachable(const Target& t, const std::string& text) {
  const bool accuracy = t.metric == "val_accuracy";
  const MetricRange range = metric_range(t.metric);
  if (t.at_least ? t.value <= range.high : t.value >= range.low) return;
  // 85 for 85%: the likeliest slip, answered with the fraction meant.
  const bool percent = accuracy && t.at_least && t.value <= 100.0;
  char fraction[32];
  std::snprintf(fraction, sizeof fraction, "%g", t.value / 100.0);
  throw ConfigError(
      "train.target '" + text + "' can never be met: " + t.metric + " lies in " + range.text,
      percent ? "accuracy is a fraction: val_accuracy>=" + std::string(fraction)
              : "e.g. val_accuracy>=0.88, val_loss<=0.35, val_mse<=0.25 or "
                "val_r2>=0.9");
}

}  // namespace

MetricRange metric_range(const std::string& metric) {
  if (metric == "val_accuracy") return {0.0, 1.0, "[0, 1]"};
  if (metric == "val_r2") return {-INFINITY, 1.0, "(-inf, 1]"};
  return {0.0, INFINITY, "[0, inf)"};
}

Target parse_target(const std::string& text) {
  Target t;
  if (text.empty() || text == "none") return t;
  const auto ge = text.find(">="), le = text.find("<=");
  const auto op = ge != std::string::npos ? ge : le;
  auto bad = [&]() -> Target {
    throw ConfigError("train.target '" + text + "' is not METRIC>=VALUE or METRIC<=VALUE",
                      "e.g. val_accuracy>=0.88 or val_loss<=0.35 (metrics: val_accuracy, val_loss; "
                      "regression: val_mse, val_r2)");
  };
  if (op == std::string::npos) return bad();
  t.metric = trimmed(text.substr(0, op));  // "val_loss <= 0.2" reads as "val_loss<=0.2"
  t.at_least = op == ge;
  const std::string value = trimmed(text.substr(op + 2));
  try {
    std::size_t used = 0;
    t.value = std::stod(value, &used);
    if (used != value.size()) return bad();
  } catch (const std::exception&) {
    return bad();
  }
  if (t.metric != "val_accuracy" && t.metric != "val_loss" && t.metric != "val_mse" &&
      t.metric != "val_r2")
    return bad();
  if (!std::isfinite(t.value))
    throw ConfigError("train.target '" + text + "': the threshold must be a finite number",
                      "e.g. val_accuracy>=0.88 or val_loss<=0.35");
  refuse_unreachable(t, text);
  return t;
}

namespace {

std::string num(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

// An int key within [lo, hi], checked before the narrowing: 2^32 + 1 threads read as 1, and
// 2^31 was reported as "got -2147483648" (2026-11-29 audit).
int int_key(Config& c, const char* key, std::int64_t lo, std::int64_t hi) {
  const std::int64_t v = c.get_int(train_key(key));
  if (v < lo || v > hi)
    c.fail(key, "in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", std::to_string(v));
  return static_cast<int>(v);
}

void require_positive(const Config& c, const char* key, double value, const char* hint) {
  if (!(value > 0)) c.fail(key, "> 0", std::to_string(value), hint);
}

// model.layers when the config has it (model.spec is then not read, so it stays out of the
// resolved config), else model.spec; both is an error, but for a list given by --set over the
// file's spec, which it replaces (every preset has a spec, so the documented --set model.layers
// was refused on each, 2026-11-29 audit).
void read_model(Config& c, TrainConfig& t) {
  if (!c.has("model.layers")) {
    t.model_spec = c.get_string(train_key("model.spec"));
    return;
  }
  if (c.has("model.spec") && c.source_of("model.layers").empty() &&
      !c.source_of("model.spec").empty())
    c.erase("model.spec");
  if (c.has("model.spec")) {
    throw ConfigError(c.source() + ": model.spec and model.layers are both set",
                      "keep one: remove model.spec (a preset's spec = ... or --set model.spec) to "
                      "use the [[model.layers]] list");
  }
  t.model_layers = nn::read_layers(c.get_table_list(train_key("model.layers")), c.source());
}

// train.overlap_comm and its bucket: whole 64-byte lines (core/params.cpp aligns every tensor
// to 16 floats), so buckets start where segments may and no two ranks share a cache line.
void read_overlap(Config& c, TrainConfig& t) {
  t.overlap_comm = c.get_bool(train_key("train.overlap_comm"));
  if (!t.overlap_comm) return;
  constexpr std::size_t kAlignFloats = 16;
  const double mib = c.get_double(train_key("train.bucket_mb"));
  const double floats = mib * double(1 << 20) / sizeof(float);
  if (!(floats >= kAlignFloats) || !std::isfinite(floats)) {
    c.fail("train.bucket_mb",
           "at least one tensor's segment alignment, 64 bytes (" + num(64.0 / double(1 << 20)) +
               " MiB)",
           num(mib), "e.g. train.bucket_mb=1");
  }
  t.bucket_floats = static_cast<std::size_t>(floats) / kAlignFloats * kAlignFloats;
}

// model.*: the network, its loss and its initialisation.
void read_model_section(Config& c, TrainConfig& t) {
  read_model(c, t);
  t.loss = c.get_string(train_key("model.loss"));
  t.device = c.get_string(train_key("model.device"));
  const std::string init = c.get_string(train_key("model.init"));
  if (init == "he")
    t.init = nn::InitScheme::kHe;
  else if (init == "glorot")
    t.init = nn::InitScheme::kGlorot;
  else if (init == "zero")
    t.init = nn::InitScheme::kZero;
  else
    c.fail("model.init", "one of: he, glorot, zero", "'" + init + "'");
}

// train.target_definition, ema_horizon and target_band (target_reading.hpp); the horizon
// against the run's length is check_ema_horizon's, once the step budget is known.
void read_target_reading(Config& c, TrainConfig& t) {
  t.target_definition = parse_target_definition(c.get_string(train_key("train.target_definition")));
  t.ema_horizon = c.get_double(train_key("train.ema_horizon"));
  t.target_band = c.get_double(train_key("train.target_band"));
  if (!(t.ema_horizon > 0.0 && t.ema_horizon <= 0.5))
    c.fail("train.ema_horizon", "in (0, 0.5]", num(t.ema_horizon), "e.g. 0.1");
  if (!(t.target_band >= 0.0 && t.target_band < 1.0))
    c.fail("train.target_band", "in [0, 1)", num(t.target_band), "e.g. 0.01");
}

// train.*: the batch, length, evaluation and target of the run; returns train.seed as read.
std::int64_t read_run(Config& c, TrainConfig& t) {
  t.global_batch = c.get_int(train_key("train.global_batch"));
  t.micro_batch = c.get_int(train_key("train.micro_batch"));
  t.accum_steps = c.get_int(train_key("train.accum_steps"));
  t.steps = c.get_int(train_key("train.steps"));
  t.epochs = c.get_double(train_key("train.epochs"));
  t.eval_every = c.get_int(train_key("train.eval_every"));
  t.log_every = c.get_int(train_key("train.log_every"));
  t.eval_batch = c.get_int(train_key("train.eval_batch"));
  const std::int64_t seed = c.get_int(train_key("train.seed"));
  t.order_seed = c.get_int(train_key("train.order_seed"));
  if (t.order_seed < -1)
    c.fail("train.order_seed", ">= -1 (-1: train.seed)", std::to_string(t.order_seed));
  t.branch_from = c.get_string(train_key("train.branch_from"));
  t.threads = int_key(c, "train.threads", 0, 4096);
  t.target = parse_target(c.get_string(train_key("train.target")));
  t.stop_at_target = c.get_bool(train_key("train.stop_at_target"));
  t.eval_growth = c.get_double(train_key("train.eval_growth"));
  t.target_resolution = c.get_double(train_key("train.target_resolution"));
  t.prune_at_step = c.get_int(train_key("train.prune_at_step"));
  read_target_reading(c, t);
  if (!(t.eval_growth >= 1.0 && std::isfinite(t.eval_growth)))
    c.fail("train.eval_growth", ">= 1 (1: every eval_every steps)", num(t.eval_growth), "e.g. 1.5");
  if (!(t.target_resolution >= 0.0 && t.target_resolution <= 1.0)) {
    c.fail("train.target_resolution", "in [0, 1] (0: the exact step, 1: no refinement)",
           num(t.target_resolution), "e.g. 0.05 for a bracket within 5% of steps-to-target");
  }
  if (t.prune_at_step < 0) c.fail("train.prune_at_step", ">= 0", std::to_string(t.prune_at_step));
  if (t.prune_at_step > 0 && !t.target.enabled()) {
    c.fail("train.prune_at_step", "0 without train.target", std::to_string(t.prune_at_step),
           "set train.target, or leave prune_at_step at 0");
  }
  if (t.stop_at_target && !t.target.enabled()) {  // it stopped nothing, without a word
    c.fail("train.stop_at_target", "false without train.target", "true",
           "set train.target, or leave stop_at_target at false");
  }
  return seed;
}

// Divergence handling, communicator and checkpoints; returns train.on_divergence as read.
std::string read_guards_and_checkpoints(Config& c, TrainConfig& t) {
  t.divergence.factor = c.get_double(train_key("train.divergence_factor"));
  const std::string on_divergence = c.get_string(train_key("train.on_divergence"));
  t.divergence.skip_spikes = on_divergence == "skip";
  if (t.divergence.skip_spikes) t.divergence.skip_limit = c.get_int(train_key("train.skip_limit"));
  // Read for the resolved config.toml alone: the communicator, built before this config (it
  // needs the world size), reads comm.backend itself.
  c.get_string(train_key("comm.backend"));
  t.checkpoint_every = c.get_int(train_key("train.checkpoint_every"));
  t.checkpoint_every_seconds = c.get_double(train_key("train.checkpoint_every_seconds"));
  t.checkpoint_keep = int_key(c, "train.checkpoint_keep", 1, 1000000);
  t.checkpoint_final = c.get_bool(train_key("train.checkpoint_final"));
  if (t.checkpoint_every < 0)
    c.fail("train.checkpoint_every", ">= 0", std::to_string(t.checkpoint_every));
  if (!(t.checkpoint_every_seconds >= 0))
    c.fail("train.checkpoint_every_seconds", ">= 0", std::to_string(t.checkpoint_every_seconds));
  t.local_sgd = read_local_sgd(c, t.checkpoint_every);
  read_overlap(c, t);

  return on_divergence;
}

// The train.* values read above, each in its range.
void check_run(const Config& c, const TrainConfig& t, std::int64_t seed,
               const std::string& on_divergence) {
  if (seed < 0) c.fail("train.seed", ">= 0", std::to_string(seed));
  require_positive(c, "train.global_batch", static_cast<double>(t.global_batch),
                   "e.g. --set train.global_batch=128");
  if (t.micro_batch < 0)
    c.fail("train.micro_batch", ">= 0 (0: derived)", std::to_string(t.micro_batch));
  if (t.accum_steps < 0)
    c.fail("train.accum_steps", ">= 0 (0: derived)", std::to_string(t.accum_steps));
  if (t.steps < 0) c.fail("train.steps", ">= 0", std::to_string(t.steps));
  if (t.steps == 0) require_positive(c, "train.epochs", t.epochs, "or set train.steps");
  require_positive(c, "train.eval_every", static_cast<double>(t.eval_every), "e.g. 500");
  require_positive(c, "train.log_every", static_cast<double>(t.log_every), "e.g. 50");
  require_positive(c, "train.eval_batch", static_cast<double>(t.eval_batch), "e.g. 2000");
  // Below 1 the reference loss itself reads as diverged: every run "diverged" at its first step
  // (2026-11-30 audit). 1 is a loss above the untrained model's, the strictest guard.
  if (!(t.divergence.factor >= 1))
    c.fail("train.divergence_factor", ">= 1", num(t.divergence.factor), "e.g. 20");
  if (on_divergence != "stop" && on_divergence != "skip") {
    c.fail("train.on_divergence", "\"stop\" or \"skip\"", "'" + on_divergence + "'");
  }
  if (t.divergence.skip_limit < 1) {
    c.fail("train.skip_limit", ">= 1", std::to_string(t.divergence.skip_limit), "e.g. 5");
  }
}

// A batch that varies (adaptive_batch.hpp: it follows the noise scale, or the planned stages of
// batch_steps.hpp), so no global batch is resolved once. True when it is on.
bool read_adaptive(Config& c, TrainConfig& t, int world_size) {
  t.adaptive = read_adaptive_batch(c, world_size, t.global_batch, t.micro_batch, t.accum_steps);
  if (!t.adaptive.enabled) return false;
  if (t.local_sgd.enabled()) {
    c.fail("train.batch_schedule",
           "\"fixed\" with local SGD (train.sync_every > 1: no step forms the global gradient "
           "the noise scale needs, and the periods are counted in steps)",
           t.adaptive.follows_noise() ? "\"adaptive\"" : "\"steps\"",
           "set train.sync_every = 1, or train.batch_schedule = \"fixed\"");
  }
  return true;
}

// Resolves global = world x micro x accum; any two fix the third.
void resolve_batch(const Config& c, TrainConfig& t, int world_size) {
  const std::int64_t per_rank_fail = t.global_batch % world_size;
  if (per_rank_fail != 0) {
    c.fail("train.global_batch",
           "divisible by the number of ranks (" + std::to_string(world_size) + ")",
           std::to_string(t.global_batch),
           "choose a global batch that is a multiple of the number of ranks, or another number "
           "of ranks (mpirun -np; --workers for lbt schedule, memory and scaling)");
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
             std::to_string(t.accum_steps),
             "drop one of micro_batch / accum_steps and let lbt derive it");
    }
    t.accum_steps = accum;
  }
}

}  // namespace

TrainConfig read_train_config(Config& c, int world_size) {
  TrainConfig t;
  read_model_section(c, t);
  read_data_config(c, t.data);
  const std::int64_t seed = read_run(c, t);
  const std::string on_divergence = read_guards_and_checkpoints(c, t);
  check_run(c, t, seed, on_divergence);
  t.seed = static_cast<std::uint64_t>(seed);
  if (!read_adaptive(c, t, world_size)) resolve_batch(c, t, world_size);
  return t;
}

}  // namespace lbt::trainer
