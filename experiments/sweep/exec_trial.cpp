// Trials that are any program; see exec_trial.hpp.
#include "experiments/sweep/exec_trial.hpp"

#include <cmath>
#include <fstream>
#include <limits>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/json_file.hpp"
#include "experiments/sweep/exec_command.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

struct EvalLog {
  std::int64_t steps = 0, steps_to_target = -1, steps_lo = 0, diverged_step = -1;
  int evaluations = 0, with_metric = 0;  // with_metric: evaluations holding the target's
  double best_loss = NAN, best_accuracy = NAN;
  std::string error;        // malformed input: the trial failed
  std::string past_budget;  // "line N (step S)": the first evaluation past the budget
};

double metric(const nlohmann::json& line, const char* name) {
  if (!line.contains(name)) return NAN;
  const auto& v = line[name];
  if (v.is_number()) return v.get<double>();
  return INFINITY;  // NaN, Infinity, null or a string from a program: not a finite value
}

// A metric outside its range is a slip (accuracy as a percentage), not a reading: "" or why.
std::string out_of_range(const nlohmann::json& line) {
  for (const char* name : {"val_loss", "val_accuracy", "val_mse", "val_r2"}) {
    const double v = metric(line, name);
    const trainer::MetricRange range = trainer::metric_range(name);
    if (std::isfinite(v) && !range.holds(v))
      return std::string(name) + " " + line[name].dump() + " is outside " + range.text +
             (std::string(name) == "val_accuracy" ? " (accuracy is a fraction, not a percentage)"
                                                  : "");
  }
  return "";
}

// A step as JSON holds it: one past int64 (an unsigned number) is past any budget, not negative.
bool step_past_int64(const nlohmann::json& line) {
  return line.contains("step") && line["step"].is_number_unsigned() &&
         line["step"].get<std::uint64_t>() >
             static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
}

std::string where(const fs::path& file, int number) {
  return file.string() + " line " + std::to_string(number);
}

// One evaluation into the log; false when the trial ends here (malformed, or diverged).
bool read_evaluation(const nlohmann::json& line, const std::string& at,
                     const trainer::Target& target, EvalLog& log) {
  if (line.is_discarded() || !line.is_object() || !line.contains("step") ||
      !line["step"].is_number_integer()) {
    log.error = at + " is not a JSON object with an integer \"step\"";
    return false;
  }
  if (step_past_int64(line)) {
    log.error = at + ": step " + line["step"].dump() + " is past any step count (int64)";
    return false;
  }
  // lbt train's replay that brackets its own reading writes earlier steps again, marked: read as
  // a restart, every trial of an --exec 'lbt train ...' sweep that met the target failed
  // (2026-11-30 audit). The protocol reads the run's own evaluations.
  if (line.contains("refinement") && line["refinement"] == true) return true;
  const auto step = line["step"].get<std::int64_t>();
  if (step < 0) {
    log.error = at + ": step " + std::to_string(step) +
                " is negative (a step counts the optimizer steps taken, from 0)";
    return false;
  }
  if (log.evaluations++ > 0 && step <= log.steps) {
    // Steps go forward: a repeated or earlier step is a second run writing into the file (an
    // old trial's program still running) or a program that restarted; its bracket is no reading.
    log.error = at + ": step " + std::to_string(step) + " after step " + std::to_string(log.steps) +
                " (steps must strictly increase)";
    return false;
  }
  log.steps = step;
  if (const std::string slip = out_of_range(line); !slip.empty()) {
    log.error = at + ": " + slip;
    return false;
  }
  const double loss = metric(line, "val_loss"), acc = metric(line, "val_accuracy");
  const double watched = metric(line, target.metric.c_str());
  log.with_metric += line.contains(target.metric);
  if (std::isinf(loss) || std::isinf(watched)) {
    log.diverged_step = step;
    return false;
  }
  if (!std::isnan(loss))
    log.best_loss = std::isnan(log.best_loss) ? loss : std::min(log.best_loss, loss);
  if (!std::isnan(acc))
    log.best_accuracy = std::isnan(log.best_accuracy) ? acc : std::max(log.best_accuracy, acc);
  if (log.steps_to_target >= 0 || std::isnan(watched)) return true;
  if (target.met(watched) && step == 0) {
    // A target the untrained model meets would put S = 0 into the fit, which reads steps on a
    // log scale; lbt's own trials refuse it before training (train_run.cpp).
    log.error =
        at + ": the target " + target.text() +
        " is met at step 0, before any training: it measures nothing (tighten train.target)";
    return false;
  }
  if (target.met(watched)) {
    log.steps_to_target = step;
  } else {
    log.steps_lo = step;
  }
  return true;
}

// The program's evaluations up to the trial's step budget ({max_steps}): one past it is not
// read, as lbt's own trial stops there, so every trial of the sweep is censored at its budget.
EvalLog read_eval_log(const fs::path& file, const trainer::Target& target, std::int64_t budget) {
  EvalLog log;
  std::error_code ec;
  std::ifstream in;
  if (fs::is_regular_file(file, ec)) in.open(file);  // not a FIFO a reader would block on
  if (!in.is_open() || !in) {
    // A FIFO or a link to /dev/zero read "wrote no eval.jsonl" (2026-11-30 audit).
    const bool there = fs::exists(fs::symlink_status(file, ec));
    log.error =
        (there ? "left " + file.string() + " as no regular file" : "wrote no " + file.string()) +
        " (the protocol: one JSON line per evaluation)";
    return log;
  }
  int number = 0, lines = 0;
  for (std::string text; next_program_line(in, text);) {
    ++number;
    if (text.empty()) continue;
    ++lines;
    if (text.ends_with(kLineOver1MiB)) {
      log.error = where(file, number) + " is over 1 MiB: no evaluation (one JSON object a line)";
      break;
    }
    const nlohmann::json line = parse_program_line(text);
    if (budget > 0 && line.is_object() && line.contains("step") &&
        line["step"].is_number_integer() &&
        (step_past_int64(line) || line["step"].get<std::int64_t>() > budget)) {
      log.past_budget = "line " + std::to_string(number) + " (step " + line["step"].dump() + ")";
      break;
    }
    if (!read_evaluation(line, where(file, number), target, log)) break;
  }
  if (lines == 0) log.error = file.string() + " is empty: the program evaluated nothing";
  // Never the target's metric (a program writing "loss" for a val_loss target): no reading of
  // the target, not a budget it ran out of (every trial read budget_exhausted, 2026-11-29 audit).
  if (log.error.empty() && log.evaluations > 0 && log.with_metric == 0 && log.diverged_step < 0)
    log.error = file.string() + ": no evaluation holds the target's metric \"" + target.metric +
                "\" (the target is " + target.text() + ")";
  return log;
}

}  // namespace

void check_exec_template(const std::string& command, const Trial& trial, std::int64_t base_seed) {
  build_exec_command(command, placeholder_values(trial, base_seed, "RUN_DIR"));
}

bool next_program_line(std::istream& in, std::string& line) {
  constexpr std::size_t kMostLineBytes = std::size_t{1} << 20;
  line.clear();
  std::streambuf* buffer = in.rdbuf();
  bool any = false, cut = false;
  for (int c; (c = buffer->sbumpc()) != std::char_traits<char>::eof();) {
    any = true;
    if (c == '\n') break;
    if (line.size() < kMostLineBytes)
      line += static_cast<char>(c);
    else
      cut = true;
  }
  if (cut) line = line.substr(0, 64) + std::string(kLineOver1MiB);
  return any;
}

nlohmann::json parse_program_line(const std::string& text) {
  std::string out;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool replaced = false;
    for (const std::string word : {"NaN", "Infinity", "-Infinity"}) {
      if (text.compare(i, word.size(), word) == 0) {
        out += "\"" + word + "\"";
        i += word.size() - 1;
        replaced = true;
        break;
      }
    }
    if (!replaced) out += c;
  }
  return nlohmann::json::parse(out, nullptr, false);
}

std::string write_exec_summary(const Trial& t, const fs::path& run_dir,
                               const trainer::Target& target, const ChildExit& e,
                               const fs::path& log_file, bool outcomes_only) {
  const fs::path eval_file = run_dir / "eval.jsonl";
  const EvalLog log = read_eval_log(eval_file, target, t.steps);
  const std::string noise_warning = exec_noise_warning(run_dir);
  const std::string budget_warning =
      log.past_budget.empty() ? ""
                              : eval_file.string() + ": evaluations past the trial's budget of " +
                                    std::to_string(t.steps) + " steps were not read, from " +
                                    log.past_budget + " (stop the program at {max_steps})";
  nlohmann::json s = {{"global_batch", t.batch_size},
                      {"target", target.text()},
                      // the last step the program evaluated; null where it evaluated none
                      {"steps", log.evaluations > 0 ? nlohmann::json(log.steps) : nlohmann::json()},
                      {"best_val_loss", null_if_nan(log.best_loss)},
                      {"best_val_accuracy", null_if_nan(log.best_accuracy)},
                      {"written_by", "lbt sweep --exec"}};
  if (!noise_warning.empty()) s["noise_warning"] = noise_warning;
  if (!budget_warning.empty()) s["budget_warning"] = budget_warning;
  if (e.signal != 0 || e.exit_code != 0) {
    const std::string why = (e.signal ? "was " : "") + exit_text(e);
    const std::string tail = tail_lines(log_file, 3);
    s["status"] = "failed";
    s["error"] = "the program " + why + (tail.empty() ? "" : ": " + tail);
  } else if (!log.error.empty()) {
    s["status"] = "failed";
    s["error"] = log.error;
  } else if (log.steps_to_target >= 0) {  // a divergence after it is recorded beside it
    s["status"] = "reached_target";
    s["steps_to_target"] = log.steps_to_target;
    s["examples_to_target"] = log.steps_to_target * t.batch_size;
    s["steps_lo"] = log.steps_lo;
    s["steps_hi"] = log.steps_to_target;
  } else {
    s["status"] = log.diverged_step >= 0 ? "diverged" : "budget_exhausted";
  }
  if (log.diverged_step >= 0 && !s.contains("error")) {
    s["diverged_step"] = log.diverged_step;
    s["divergence_reason"] = "a non-finite metric at step " + std::to_string(log.diverged_step);
  }
  if (outcomes_only && s["status"] != "reached_target" && s["status"] != "diverged") return "";
  io::atomic_write(run_dir / "summary.json", json_text_of_output(s));
  std::string warnings;
  for (const std::string& w : {budget_warning, noise_warning}) {
    if (!w.empty()) warnings += (warnings.empty() ? t.name + ": " : "; ") + w;
  }
  return warnings;
}

}  // namespace lbt::experiments
