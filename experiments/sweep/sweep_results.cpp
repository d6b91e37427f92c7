// Sweep results and CSV files; see sweep_results.hpp.
#include "experiments/sweep/sweep_results.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/io.hpp"
#include "core/toml_text.hpp"
#include "experiments/json_file.hpp"
#include "experiments/sweep/exec_trial.hpp"
#include "experiments/sweep/summary_checks.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

// An empty cell for a value never measured (NaN), as pandas and lbt's readers expect.
std::string csv_number(double v) {
  if (std::isnan(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string opt_int(std::int64_t v) {
  return v >= 0 ? std::to_string(v) : "";
}
std::string opt_num(double v) {
  return std::isfinite(v) ? csv_number(v) : "";
}  // empty: not measured

// Each reading's bracket, fluctuation and best value (empty: not met or not recorded).
std::string reading_columns(const TrialResult& r) {
  std::string out;
  for (const char* name : kReadingNames) {
    const auto it = r.readings.find(name);
    const TrialResult::Reading g = it == r.readings.end() ? TrialResult::Reading{} : it->second;
    // Appended piece by piece: "," + std::string&& trips GCC 12's false -Wrestrict.
    out.append(",").append(opt_int(g.hi >= 0 ? g.lo : -1)).append(",").append(opt_int(g.hi));
    out.append(",").append(opt_num(g.fluctuation)).append(",").append(opt_num(g.best));
  }
  return out;
}

// An interval's two cells: empty where not recorded or not resolved (null; Fieller's upper bound
// while |G|^2 is within noise of 0).
std::string interval_columns(const TrialNoise::Interval& ci) {
  std::string out;
  return out.append(",").append(csv_number(ci.lo)).append(",").append(csv_number(ci.hi));
}

// The intervals of best_val_accuracy, best_val_loss and the three B_simple columns, after the
// readings' columns (so the older columns keep their places).
std::string interval_columns(const TrialResult& r) {
  return interval_columns(r.best_val_accuracy_ci95) + interval_columns(r.best_val_loss_ci95) +
         interval_columns(r.noise.start_ci95) + interval_columns(r.noise.at_target_ci95) +
         interval_columns(r.noise.averaged_ci95);
}

std::string trial_columns(const TrialResult& r, const fs::path& sweep_dir) {
  const Trial& t = r.trial;
  // The trial's settings exactly (shortest_text), so an LR copied from best.csv or read by lbt
  // plan is the one the trial trained with: %.6g wrote the sqrt-scaled 0.05 x 2^(1/2) as 0.0707107.
  std::string momentum = t.momentum >= 0 ? shortest_text(t.momentum) : "";
  return csv_field(t.name) + "," + std::to_string(t.batch_size) + "," + shortest_text(t.lr) + "," +
         momentum + "," + std::to_string(t.seed) + "," + r.status + "," +
         opt_int(r.steps_to_target) + "," + opt_int(r.examples_to_target) + "," +
         opt_int(r.steps_lo) + "," + opt_int(r.steps_to_target) + "," + opt_int(r.steps) + "," +
         csv_number(r.wall_time_s) + "," + csv_number(r.best_val_accuracy) + "," +
         csv_number(r.best_val_loss) + "," + csv_field((fs::path("trials") / t.name).string()) +
         "," + opt_num(r.noise.start) + "," + opt_num(r.noise.at_target) + "," +
         opt_num(r.noise.averaged) + "," + r.definition + reading_columns(r) + interval_columns(r);
}

const char* kTrialHeader =
    "trial,batch_size,lr,momentum,seed,status,steps_to_target,examples_to_target,steps_lo,steps_hi,"
    "steps,wall_time_s,"
    "best_val_accuracy,best_val_loss,run_dir,b_simple_start,b_simple_at_target,b_simple_avg,"
    "target_definition,ema_steps_lo,ema_steps_hi,ema_fluctuation,ema_best,"
    "first_passage_steps_lo,first_passage_steps_hi,first_passage_fluctuation,first_passage_best,"
    "best_val_accuracy_lo,best_val_accuracy_hi,best_val_loss_lo,best_val_loss_hi,"
    "b_simple_start_lo,b_simple_start_hi,b_simple_at_target_lo,b_simple_at_target_hi,"
    "b_simple_avg_lo,b_simple_avg_hi";

// A string field of summary.json, or `otherwise` when absent or not a string (a summary edited
// by hand or by a program must not abort the sweep reading it).
std::string text_field(const nlohmann::json& s, const char* key, const std::string& otherwise) {
  return s.contains(key) && s[key].is_string() ? s[key].get<std::string>() : otherwise;
}

// summary.json's target_definition and readings; a summary without them (a program's trial,
// or an lbt without readings) read its own metric's first passage: steps_lo and steps_to_target.
void read_readings(const nlohmann::json& s, TrialResult& r) {
  r.definition = text_field(s, "target_definition", "first_passage");
  const auto step = [](const nlohmann::json& j, const char* k) -> std::int64_t {
    return j.contains(k) && j[k].is_number_integer() ? j[k].get<std::int64_t>() : -1;
  };
  const auto number = [](const nlohmann::json& j, const char* k) {
    return j.contains(k) && j[k].is_number() ? j[k].get<double>()
                                             : std::numeric_limits<double>::quiet_NaN();
  };
  if (!s.contains("readings") || !s["readings"].is_object()) {
    r.readings["first_passage"] = {r.steps_to_target >= 0 ? r.steps_lo : -1, r.steps_to_target};
    return;
  }
  for (const auto& [name, g] : s["readings"].items()) {
    if (!g.is_object()) continue;
    r.readings[name] = {step(g, "steps_lo"), step(g, "steps_hi"), number(g, "fluctuation"),
                        number(g, "best")};
  }
}

}  // namespace

bool is_final_status(const std::string& s) {
  return s == "reached_target" || s == "budget_exhausted" || s == "diverged" || s == "completed" ||
         s == "pruned" || s == "failed" || s == "timeout";
}

TrialResult read_trial_result(const Trial& trial, const fs::path& run_dir, bool exec_trial) {
  TrialResult r;
  r.trial = trial;
  const fs::path summary = run_dir / "summary.json";
  if (!fs::exists(summary)) return r;
  nlohmann::json s;
  std::string text;
  try {
    text = io::read_file(summary);
    s = nlohmann::json::parse(text);
    if (!s.is_object()) r.unreadable = "not a JSON object";
  } catch (const nlohmann::json::exception& e) {
    r.unreadable = text.empty() ? "empty" : "not JSON: " + json_error_text(e);
  } catch (const std::exception& e) {
    r.unreadable = "unreadable (" + std::string(e.what()) + ")";  // "summary.json is unreadable"
  }
  if (!r.unreadable.empty()) {
    r.status = "running";  // unreadable: treat as unfinished, it will be redone
    return r;
  }
  // lbt writes an --exec trial's summary when the program has ended (exec_trial.cpp) or its
  // verdict (trial_lifecycle.cpp); a summary.json the program left is no result of lbt's.
  const std::string writer = text_field(s, "written_by", "");
  if (exec_trial && writer != "lbt sweep --exec" && writer != "lbt sweep") {
    r.status = "running";
    return r;
  }
  // A count lbt writes as a whole number; anything else (an edit, a float past 2^63, which no
  // int64 holds) reads as not measured.
  auto get_int = [&](const char* k) -> std::int64_t {
    return s.contains(k) && s[k].is_number_integer() ? s[k].get<std::int64_t>() : -1;
  };
  auto get_double = [&](const char* k) -> double {
    return s.contains(k) && s[k].is_number() ? s[k].get<double>()
                                             : std::numeric_limits<double>::quiet_NaN();
  };
  // An edited step to the target (summary_checks.hpp): unreadable, the trial runs again.
  if (const std::string edited = edited_steps_to_target(s, trial.steps); !edited.empty()) {
    r.unreadable = "not what lbt wrote: " + edited;
    r.status = "running";
    return r;
  }
  r.status = text_field(s, "status", "running");
  r.steps = get_int("steps");
  r.steps_to_target = get_int("steps_to_target");
  r.examples_to_target = get_int("examples_to_target");
  r.steps_lo = get_int("steps_lo");
  r.wall_time_s = get_double("wall_time_s");
  r.best_val_accuracy = get_double("best_val_accuracy");
  r.best_val_loss = get_double("best_val_loss");
  r.best_val_accuracy_ci95 = read_interval(s, "best_val_accuracy_ci95");
  r.best_val_loss_ci95 = read_interval(s, "best_val_loss_ci95");
  if (s.contains("error") && s["error"].is_string()) r.message = s["error"];
  if (s.contains("divergence_reason") && s["divergence_reason"].is_string())
    r.message = s["divergence_reason"];
  // A summary that says reached_target without a step would break the fit: fall back to the
  // evaluation log, which records every evaluation's metrics.
  if (r.status == "reached_target" && r.steps_to_target < 0) {
    trainer::Target target;  // none: a target that does not parse meets nothing
    try {
      target = trainer::parse_target(text_field(s, "target", ""));
    } catch (const Error&) {
    }
    r.steps_to_target = first_step_meeting_target(run_dir / "eval.jsonl", target);
    if (r.steps_to_target >= 0) r.examples_to_target = r.steps_to_target * trial.batch_size;
  }
  read_readings(s, r);
  // A program's noise.jsonl holds raw squared norms (exec_trial.hpp), lbt's its estimates.
  if (is_final_status(r.status)) {
    r.noise = writer == "lbt sweep --exec"
                  ? read_exec_noise(run_dir, r.steps_to_target, trial.steps)
                  : read_trial_noise(run_dir, r.steps_to_target);
  }
  return r;
}

std::int64_t first_step_meeting_target(const fs::path& eval_jsonl, const trainer::Target& target) {
  if (!target.enabled()) return -1;
  std::ifstream in = io::open_regular_file(eval_jsonl);
  std::string line;
  std::int64_t first = -1;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json e;
    try {
      e = nlohmann::json::parse(line);
    } catch (const std::exception&) {
      continue;  // a torn last line after a kill
    }
    if (!e.is_object() || !e.contains("step") || !e["step"].is_number_integer() ||
        !e.contains("val_loss"))
      continue;
    const std::int64_t step = e["step"].get<std::int64_t>();
    // the watched metric; absent or null (NaN written by lbt) is never met
    const auto it = e.find(target.metric);
    const double value = it != e.end() && it->is_number() ? it->get<double>() : NAN;
    if (target.met(value) && (first < 0 || step < first)) first = step;
  }
  return first;
}

std::vector<BestRow> best_per_batch(const std::vector<TrialResult>& results) {
  std::map<std::int64_t, std::vector<const TrialResult*>> by_batch;
  for (const auto& r : results) {
    if (!r.trial.adaptive) by_batch[r.trial.batch_size].push_back(&r);  // adaptive.json's
  }
  std::vector<BestRow> rows;
  for (const auto& [B, trials] : by_batch) {
    BestRow row;
    row.batch_size = B;
    row.trials = static_cast<int>(trials.size());
    std::vector<SearchPoint> points;
    std::vector<const TrialResult*> searched;
    double lr_lo = trials.front()->trial.lr, lr_hi = lr_lo;
    for (const TrialResult* r : trials) {
      row.reached += r->status == "reached_target" && r->steps_to_target >= 0;
      if (r->trial.seed != 0) continue;
      lr_lo = std::min(lr_lo, r->trial.lr);
      lr_hi = std::max(lr_hi, r->trial.lr);
      points.push_back({r->trial.lr, r->status, r->steps_to_target});  // LR orders as multiplier
      searched.push_back(r);
    }
    const int best = best_point(points);
    if (best >= 0) {
      row.best = searched[best];
      for (const TrialResult* r : trials) {
        if (r == row.best ||
            (r->trial.seed > 0 && r->trial.multiplier == row.best->trial.multiplier))
          row.seeds.push_back(r);
      }
      analysis::MeasuredPoint seeds{static_cast<double>(B), {}};
      std::vector<std::int64_t> steps;
      for (const TrialResult* r : row.seeds) {
        const bool met = r->status == "reached_target" && r->steps_to_target >= 0;
        if (met) steps.push_back(r->steps_to_target);
        const auto s = seed_steps(r->status, r->steps_lo, met ? r->steps_to_target : -1, r->steps);
        if (s) seeds.seeds.push_back(*s);
      }
      std::sort(steps.begin(), steps.end());
      row.seeds_reached = static_cast<int>(steps.size());
      row.steps_median = analysis::median_steps(seeds);
      row.steps_min = steps.front();
      row.steps_max = steps.back();
    }
    row.lr_at_edge = row.best && points.size() > 1 &&
                     (row.best->trial.lr == lr_lo || row.best->trial.lr == lr_hi);
    rows.push_back(row);
  }
  return rows;
}

std::optional<analysis::BracketedSteps> seed_steps(const std::string& status, std::int64_t lo,
                                                   std::int64_t hi, std::int64_t steps_run) {
  if (hi >= 0)
    return analysis::BracketedSteps{static_cast<double>(lo >= 0 ? lo : hi - 1),
                                    static_cast<double>(hi)};
  if (status == "diverged") return analysis::BracketedSteps{HUGE_VAL, HUGE_VAL};
  if (status != "reached_target" && status != "budget_exhausted" && status != "pruned")
    return std::nullopt;
  return analysis::BracketedSteps{steps_run >= 0 ? static_cast<double>(steps_run) : HUGE_VAL,
                                  HUGE_VAL};
}

namespace {

// `value` to 3 significant digits, rounded away from the best value (down for a target at
// least, up for one at most), so that the target it names is at least that easy.
double round_easier(double value, bool at_least) {
  if (value == 0.0 || !std::isfinite(value)) return value;
  const double unit = std::pow(10.0, std::floor(std::log10(std::abs(value))) - 2);
  return (at_least ? std::floor(value / unit) : std::ceil(value / unit)) * unit;
}

std::string three_digits(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

}  // namespace

std::vector<std::string> target_noise_warnings(const std::vector<TrialResult>& results,
                                               const trainer::Target& target) {
  std::vector<std::string> warnings;
  for (const BestRow& row : best_per_batch(results)) {
    if (!row.best) continue;
    const auto it = row.best->readings.find(row.best->definition);
    if (it == row.best->readings.end()) continue;
    const TrialResult::Reading& g = it->second;
    const double gap = std::abs(g.best - target.value);
    if (!(std::isfinite(g.fluctuation) && gap < 2.0 * g.fluctuation)) continue;
    // The advice eases the target (it said "lower the target": for val_loss <= X, a harder one).
    trainer::Target easier = target;
    easier.value =
        round_easier(target.at_least ? g.best - 2.0 * g.fluctuation : g.best + 2.0 * g.fluctuation,
                     target.at_least);
    warnings.push_back("B=" + std::to_string(row.batch_size) + ": the best " + target.metric +
                       " (" + row.best->definition + ") " + three_digits(g.best) +
                       " is within 2 x its fluctuation " + three_digits(g.fluctuation) +
                       " of the target " + csv_number(target.value) +
                       ": its steps-to-target is a first passage of noise; ease the target to " +
                       easier.text() + " or beyond, which its runs pass clearly");
  }
  return warnings;
}

void write_sweep_csv(const fs::path& path, const std::vector<TrialResult>& results,
                     const fs::path& sweep_dir) {
  std::set<const TrialResult*> chosen;
  for (const BestRow& row : best_per_batch(results))
    chosen.insert(row.seeds.begin(), row.seeds.end());
  // By batch size, then trial number: the LR search adds trials in the order results arrive,
  // which --jobs > 1 makes depend on timing; the table must not.
  std::vector<const TrialResult*> rows;
  for (const auto& r : results) {
    if (!r.trial.adaptive) rows.push_back(&r);  // adaptive ones: adaptive.json, not the fit's
  }
  std::ranges::stable_sort(
      rows, {}, [](const TrialResult* r) { return std::pair(r->trial.batch_size, r->trial.k); });
  std::string out = std::string(kTrialHeader) + ",best,message\n";
  for (const TrialResult* r : rows) {
    out += trial_columns(*r, sweep_dir) + (chosen.count(r) ? ",true," : ",false,") +
           csv_field(r->message) + "\n";
  }
  io::atomic_write(path, out);
}

void write_best_csv(const fs::path& path, const std::vector<TrialResult>& results,
                    const fs::path& sweep_dir,
                    const std::map<std::int64_t, std::string>& decisions) {
  std::string out = std::string(kTrialHeader) +
                    ",trials,reached,lr_at_edge,seeds,seeds_reached,steps_median,steps_min,"
                    "steps_max,search\n";
  for (const BestRow& row : best_per_batch(results)) {
    if (row.best) {
      out += trial_columns(*row.best, sweep_dir);
    } else {
      // trial, batch_size, lr, momentum, seed, status and the header's other columns empty
      const auto columns = std::count(kTrialHeader, kTrialHeader + std::strlen(kTrialHeader), ',');
      out += ',' + std::to_string(row.batch_size) + ",,,,unreached" + std::string(columns - 5, ',');
    }
    const auto decision = decisions.find(row.batch_size);
    out += ',' + std::to_string(row.trials) + ',' + std::to_string(row.reached) +
           (row.lr_at_edge ? ",true," : ",false,") + std::to_string(row.seeds.size()) + ',' +
           std::to_string(row.seeds_reached) + ',' + csv_number(row.steps_median) + ',' +
           opt_int(row.steps_min) + ',' + opt_int(row.steps_max) + ',' +
           csv_field(decision == decisions.end() ? "" : decision->second) + '\n';
  }
  io::atomic_write(path, out);
}

}  // namespace lbt::experiments
