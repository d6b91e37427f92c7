// Trials that are any program; see exec_trial.hpp.
#include "experiments/exec_trial.hpp"

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.hpp"
#include "core/io.hpp"
#include "noise/gradient_noise.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

std::map<std::string, std::string> placeholder_values(const Trial& t, std::int64_t base_seed,
                                                      const fs::path& run_dir) {
  std::map<std::string, std::string> v;
  for (const std::string& o : t.overrides) {  // every key the sweep sets: {section.key}
    const auto eq = o.find('=');
    v[o.substr(0, eq)] = o.substr(eq + 1);
  }
  char lr[32];
  std::snprintf(lr, sizeof lr, "%.17g", t.lr);
  v["batch_size"] = std::to_string(t.batch_size);
  v["lr"] = lr;
  v["seed"] = std::to_string(base_seed + t.seed);
  v["run_dir"] = run_dir.string();
  v["max_steps"] = std::to_string(t.steps);
  v["eval_every"] = std::to_string(t.eval_every);
  return v;
}

struct EvalLog {
  std::int64_t steps = 0, steps_to_target = -1, steps_lo = 0, diverged_step = -1;
  double best_loss = NAN, best_accuracy = NAN;
  std::string error;  // malformed input: the trial failed
};

double metric(const nlohmann::json& line, const char* name) {
  if (!line.contains(name)) return NAN;
  const auto& v = line[name];
  if (v.is_number()) return v.get<double>();
  return INFINITY;  // "nan", "inf", null from a program: not a finite value
}

EvalLog read_eval_log(const fs::path& file, const trainer::Target& target) {
  EvalLog log;
  std::ifstream in(file);
  if (!in) {
    log.error = "wrote no " + file.string() + " (the protocol: one JSON line per evaluation)";
    return log;
  }
  int number = 0;
  for (std::string text; std::getline(in, text);) {
    ++number;
    if (text.empty()) continue;
    const auto line = nlohmann::json::parse(text, nullptr, false);
    if (line.is_discarded() || !line.is_object() || !line.contains("step") ||
        !line["step"].is_number_integer()) {
      log.error = file.string() + " line " + std::to_string(number) +
                  " is not a JSON object with an integer \"step\"";
      return log;
    }
    const auto step = line["step"].get<std::int64_t>();
    log.steps = std::max(log.steps, step);
    const double loss = metric(line, "val_loss"), acc = metric(line, "val_accuracy");
    const double watched = metric(line, target.metric.c_str());
    if (std::isinf(loss) || std::isinf(watched)) {
      log.diverged_step = step;
      return log;
    }
    if (!std::isnan(loss))
      log.best_loss = std::isnan(log.best_loss) ? loss : std::min(log.best_loss, loss);
    if (!std::isnan(acc))
      log.best_accuracy = std::isnan(log.best_accuracy) ? acc : std::max(log.best_accuracy, acc);
    if (log.steps_to_target >= 0 || std::isnan(watched)) continue;
    if (target.met(watched)) {
      log.steps_to_target = step;
    } else {
      log.steps_lo = step;
    }
  }
  if (number == 0) log.error = file.string() + " is empty: the program evaluated nothing";
  return log;
}

nlohmann::json measured(double v) {
  return std::isnan(v) ? nlohmann::json() : nlohmann::json(v);
}

}  // namespace

std::string expand_placeholders(const std::string& command, const Trial& trial,
                                std::int64_t base_seed, const fs::path& run_dir) {
  const auto values = placeholder_values(trial, base_seed, run_dir);
  std::string out;
  for (std::size_t i = 0; i < command.size(); ++i) {
    if (command[i] != '{') {
      out += command[i];
      continue;
    }
    const auto close = command.find('}', i);
    const std::string name = command.substr(i + 1, close == std::string::npos ? 0 : close - i - 1);
    const auto it = values.find(name);
    if (close == std::string::npos || it == values.end()) {
      std::string known;
      for (const auto& [k, v] : values) known += (known.empty() ? "" : ", ") + ("{" + k + "}");
      throw ConfigError("--exec: unknown placeholder {" + name + "}", "use one of " + known);
    }
    out += it->second;
    i = close;
  }
  return out;
}

void write_exec_summary(const Trial& t, const fs::path& run_dir, const trainer::Target& target,
                        const ChildExit& e, const fs::path& log_file) {
  const EvalLog log = read_eval_log(run_dir / "eval.jsonl", target);
  nlohmann::json s = {{"global_batch", t.batch_size},
                      {"target", target.text()},
                      {"steps", log.steps},
                      {"best_val_loss", measured(log.best_loss)},
                      {"best_val_accuracy", measured(log.best_accuracy)},
                      {"written_by", "lbt sweep --exec"}};
  if (e.signal != 0 || e.exit_code != 0) {
    const std::string why = e.signal ? "killed by signal " + std::to_string(e.signal)
                                     : "exited with code " + std::to_string(e.exit_code);
    const std::string tail = tail_lines(log_file, 3);
    s["status"] = "failed";
    s["error"] = "the program " + why + (tail.empty() ? "" : ": " + tail);
  } else if (!log.error.empty()) {
    s["status"] = "failed";
    s["error"] = log.error;
  } else if (log.diverged_step >= 0) {
    s["status"] = "diverged";
    s["diverged_step"] = log.diverged_step;
    s["divergence_reason"] = "a non-finite metric at step " + std::to_string(log.diverged_step);
  } else if (log.steps_to_target >= 0) {
    s["status"] = "reached_target";
    s["steps_to_target"] = log.steps_to_target;
    s["examples_to_target"] = log.steps_to_target * t.batch_size;
    s["steps_lo"] = log.steps_lo;
    s["steps_hi"] = log.steps_to_target;
  } else {
    s["status"] = "budget_exhausted";
  }
  io::atomic_write(run_dir / "summary.json", s.dump(2) + "\n");
}

TrialNoise read_exec_noise(const fs::path& run_dir, std::int64_t steps_to_target) {
  struct Sample {
    std::int64_t step;
    noise::NoiseEstimate e;
  };
  std::vector<Sample> samples;
  std::ifstream in(run_dir / "noise.jsonl");
  for (std::string text; std::getline(in, text);) {
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.contains("g_small_sq") || !j.contains("g_big_sq")) continue;
    const double b = j.value("b_small", 0.0), B = j.value("b_big", 0.0);
    if (!(b > 0 && B > b)) continue;
    samples.push_back({j.value("step", std::int64_t{0}),
                       noise::two_batch_estimate(b, j["g_small_sq"].get<double>(), B,
                                                 j["g_big_sq"].get<double>())});
  }
  // B_simple of samples [from, to): the ratio of the means (each estimate is unbiased, their
  // ratio is not: average first); unresolved (NaN) while the mean |G|^2 is not positive.
  const auto ratio = [&](std::size_t from, std::size_t to) {
    double G = 0, T = 0;
    for (std::size_t i = from; i < to; ++i) G += samples[i].e.G_sq, T += samples[i].e.trace_sigma;
    return G > 0 && to > from ? T / G : NAN;
  };
  TrialNoise n;
  n.records = static_cast<int>(samples.size());
  if (samples.empty()) return n;
  const std::size_t window =
      std::max<std::size_t>(1, std::min<std::size_t>(20, samples.size() / 4));
  n.start = ratio(0, window);
  n.averaged = ratio(0, samples.size());
  if (steps_to_target >= 0) {
    std::size_t end = 0;
    while (end < samples.size() && samples[end].step <= steps_to_target) ++end;
    n.at_target = ratio(end > window ? end - window : 0, end);
  }
  return n;
}

}  // namespace lbt::experiments
