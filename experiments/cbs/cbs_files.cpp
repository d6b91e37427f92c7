// lbt cbs's files; see cbs_files.hpp.
#include "experiments/cbs/cbs_files.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/io.hpp"
#include "core/json_number.hpp"
#include "experiments/plots.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string csv_cell(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

bool is_estimator_record(const nlohmann::json& j) {
  return j.is_object() && j.contains("estimator") && j["estimator"].is_string() &&
         j.contains("step") && j["step"].is_number_integer();
}

double value_of(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number() ? j[key].get<double>() : kNaN;
}

double ci_end(const nlohmann::json& j, int i) {
  if (!j.contains("b_simple_ci95") || !j["b_simple_ci95"].is_array()) return kNaN;
  const auto& v = j["b_simple_ci95"];
  return v.size() == 2 && v[i].is_number() ? v[i].get<double>() : kNaN;
}

BSimpleAtStep from_record(const nlohmann::json& j) {
  return {value_of(j, "b_simple"), ci_end(j, 0), ci_end(j, 1), j["step"].get<std::int64_t>(),
          j["estimator"].get<std::string>()};
}

// The CBS the seeds' readings allow, [k_lo B, k_upper B] (cbs_estimate.hpp), the upper end
// null where a seed's largest k was inside. With one seed, the grid's resolution alone (it was
// null, though the reading k says k B <= CBS < k' B all the same).
nlohmann::json cbs_interval_json(const CbsPoint& p) {
  const CbsEstimate& e = p.estimate;
  if (e.k_max == 0) return nullptr;
  return {e.k_lo * p.batch, e.k_upper > 0 ? nlohmann::json(e.k_upper * p.batch) : nlohmann::json()};
}

nlohmann::json bound_json(const CbsPoint& p, const std::vector<std::int64_t>& ks) {
  if (p.estimate.bound == "below")
    return {{"kind", "below"}, {"batch", ks.size() > 1 ? ks[1] * p.batch : p.batch}};
  if (p.estimate.bound == "at_least") return {{"kind", "at_least"}, {"batch", ks.back() * p.batch}};
  return nullptr;
}

// Resolved on the grid (not a bound, not unmeasured): the estimate in examples.
bool resolved(const CbsEstimate& e) {
  return e.bound.empty() && e.k_max > 0;
}

// Each seed's k_max, null where it has no reading (a branch it needed measured nothing).
nlohmann::json seed_readings_json(const CbsEstimate& e) {
  nlohmann::json out = nlohmann::json::array();
  for (std::int64_t k : e.k_max_per_seed) out.push_back(k > 0 ? nlohmann::json(k) : nullptr);
  return out;
}

nlohmann::json branch_json(const BranchResult& r) {
  const Branch& b = r.branch;
  nlohmann::json j = {{"name", b.name},
                      {"k", b.multiplier},
                      {"seed_index", b.seed_index},
                      {"order_seed", b.order_seed},
                      {"batch", b.global_batch},
                      {"steps", b.steps},
                      {"examples", b.examples},
                      {"status", r.status},
                      {"val_loss", finite_or_null(r.loss)}};
  if (!r.message.empty()) j["error"] = r.message;
  return j;
}

// The mean over seeds of multiplier k's losses; NaN where a seed's branch has none (it diverged
// or failed): a mean of the others read as the mean over seeds (2026-11-29 audit).
double mean_loss(const CbsPoint& p, std::int64_t k) {
  double sum = 0.0;
  int n = 0;
  for (const BranchResult& r : p.branches) {
    if (r.branch.multiplier != k) continue;
    if (!std::isfinite(r.loss)) return kNaN;
    sum += r.loss;
    ++n;
  }
  return n ? sum / n : kNaN;
}

// The branches of a step that ended with `status` (the rest failed, timed out or are missing).
std::size_t count_status(const CbsPoint& p, const std::string& status) {
  std::size_t n = 0;
  for (const BranchResult& r : p.branches) n += r.status == status;
  return n;
}

nlohmann::json point_json(const CbsPoint& p, const CbsSettings& settings) {
  const CbsEstimate& e = p.estimate;
  nlohmann::json losses = nlohmann::json::object();
  for (std::int64_t k : settings.multipliers) {
    nlohmann::json per_seed = nlohmann::json::array();
    for (int s = 0; s < settings.seeds; ++s) {
      double l = kNaN;
      for (const BranchResult& r : p.branches)
        if (r.branch.multiplier == k && r.branch.seed_index == s) l = r.loss;
      per_seed.push_back(finite_or_null(l));
    }
    losses[std::to_string(k)] = per_seed;
  }
  nlohmann::json branches = nlohmann::json::array();
  for (const BranchResult& r : p.branches) branches.push_back(branch_json(r));
  return {{"step", p.step},
          {"batch", p.batch},
          {"branch_examples", p.examples},
          {"branch_examples_rule", p.length.rule},
          {"reference_fall_per_example",
           p.length.evaluations > 0 ? finite_or_null(p.length.fall_per_example) : nlohmann::json()},
          {"reference_loss_noise",
           p.length.evaluations > 0 ? finite_or_null(p.length.noise) : nlohmann::json()},
          {"loss_at_checkpoint", finite_or_null(p.loss_at_checkpoint)},
          {"reference_fall_in_tolerances", finite_or_null(p.fall_in_tolerances())},
          {"cbs", resolved(e) ? nlohmann::json(e.k_max * p.batch) : nlohmann::json()},
          {"cbs_interval", cbs_interval_json(p)},
          {"bound", bound_json(p, settings.multipliers)},
          {"k_max", e.k_max > 0 ? nlohmann::json(e.k_max) : nlohmann::json()},
          {"k_max_per_seed", seed_readings_json(e)},
          {"tolerance", finite_or_null(e.tolerance)},
          {"tolerance_measured", e.tolerance_measured},
          {"reference_loss", finite_or_null(e.reference_loss)},
          {"reference_loss_std", finite_or_null(e.reference_std)},
          {"b_simple", finite_or_null(p.noise.b_simple)},
          {"b_simple_ci95", {finite_or_null(p.noise.ci_lo), finite_or_null(p.noise.ci_hi)}},
          {"b_simple_step", p.noise.step >= 0 ? nlohmann::json(p.noise.step) : nlohmann::json()},
          {"b_simple_estimator", p.noise.estimator},
          {"val_loss", losses},
          {"branches", branches}};
}

}  // namespace

BSimpleAtStep read_noise_at_step(const fs::path& run_dir, std::int64_t step) {
  // The records of the logged step nearest `step` (the earlier one on a tie), one per estimator;
  // the last line of a step wins (a resumed run rewrites its lines).
  std::map<std::string, nlohmann::json> at_nearest;
  std::int64_t nearest = -1;
  std::ifstream in = io::open_regular_file(run_dir / "noise.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (!is_estimator_record(j)) continue;
    const std::int64_t s = j["step"].get<std::int64_t>();
    const std::int64_t d = std::llabs(s - step), best = std::llabs(nearest - step);
    if (nearest >= 0 && (d > best || (d == best && s > nearest))) continue;
    if (s != nearest) at_nearest.clear();
    nearest = s;
    at_nearest[j["estimator"].get<std::string>()] = j;
  }
  // A resolved value where one estimator has it (the two-batch one first), else the record as
  // it is: b_simple null with the bounds it has. Never the nearest *resolved* record: a value
  // is resolved when its window's |G|^2 happened to come out large, so picking those would
  // bias B_simple low where it is large.
  BSimpleAtStep unresolved{kNaN, kNaN, kNaN, -1, ""};
  for (const char* name : {"two_batch", "per_example"}) {
    if (!at_nearest.count(name)) continue;
    const BSimpleAtStep n = from_record(at_nearest[name]);
    if (std::isfinite(n.b_simple)) return n;
    if (unresolved.step < 0) unresolved = n;
  }
  return unresolved;
}

void write_cbs_json(const fs::path& path, const CbsSettings& settings,
                    const std::vector<CbsPoint>& points) {
  nlohmann::json j = {
      {"reference", settings.reference.string()},
      {"definition",
       "Merrill et al. 2025 (arXiv:2505.23971): CBS = k_max x B, k_max the largest multiplier k "
       "such that every branch at k' x B, 1 < k' <= k, trained for branch_examples from the "
       "checkpoint, ends with val_loss <= reference_loss + tolerance"},
      {"reference_loss", "mean over data-order seeds of the k = 1 branch's final val_loss"},
      {"tolerance_rule",
       settings.tolerance_given < 0
           ? "measured at each step: " + csv_cell(kToleranceStds) +
                 " x the sample std over data-order seeds of the k = 1 branch's final val_loss"
           : "given: --tolerance " + csv_cell(settings.tolerance_given)},
      {"interval",
       "cbs is the lower median over data-order seeds of k_max x B; cbs_interval the CBS their "
       "readings allow: from the smallest k_max x B to the next multiplier above the largest "
       "(a reading k says k B <= CBS < k' B), the upper end null where a seed's largest k was "
       "inside; with one seed, the grid's step alone"},
      {"bound",
       "below: even the smallest k > 1 was outside the tolerance, CBS < that batch; "
       "at_least: the largest k was inside, CBS >= that batch; cbs is null then"},
      {"lr", "the reference's schedule at the same data position (examples) times " +
                 settings.scaling + " scaling from B to k x B"},
      {"multipliers", settings.multipliers},
      {"seeds", settings.seeds},
      {"scaling", settings.scaling},
      {"points", nlohmann::json::array()}};
  for (const CbsPoint& p : points) j["points"].push_back(point_json(p, settings));
  io::atomic_write(path, j.dump(2) + "\n");
}

void write_cbs_csv(const fs::path& path, const CbsSettings& settings,
                   const std::vector<CbsPoint>& points) {
  std::ostringstream out;
  out << "step,batch,branch_examples,cbs,cbs_lo,cbs_hi,bound,bound_batch,k_max,tolerance,"
         "tolerance_measured,reference_loss,reference_loss_std,b_simple,b_simple_lo,b_simple_hi,"
         "b_simple_step,completed,diverged,failed";
  for (std::int64_t k : settings.multipliers) out << ",val_loss_k" << k;
  out << "\n";
  for (const CbsPoint& p : points) {
    const CbsEstimate& e = p.estimate;
    const nlohmann::json bound = bound_json(p, settings.multipliers);
    const nlohmann::json interval = cbs_interval_json(p);
    const auto end = [&](int i) {  // empty: none, or open above
      return interval.is_array() && !interval[i].is_null() ? interval[i].dump() : "";
    };
    out << p.step << ',' << p.batch << ',' << p.examples << ','
        << (resolved(e) ? std::to_string(e.k_max * p.batch) : "") << ',' << end(0) << ',' << end(1)
        << ',' << (bound.is_null() ? "" : bound["kind"].get<std::string>()) << ','
        << (bound.is_null() ? "" : std::to_string(bound["batch"].get<std::int64_t>())) << ','
        << (e.k_max > 0 ? std::to_string(e.k_max) : "") << ',' << csv_cell(e.tolerance) << ','
        << (e.tolerance_measured ? "true" : "false") << ',' << csv_cell(e.reference_loss) << ','
        << csv_cell(e.reference_std) << ',' << csv_cell(p.noise.b_simple) << ','
        << csv_cell(p.noise.ci_lo) << ',' << csv_cell(p.noise.ci_hi) << ','
        << (p.noise.step >= 0 ? std::to_string(p.noise.step) : "") << ','
        << count_status(p, "completed") << ',' << count_status(p, "diverged") << ','
        << p.branches.size() - count_status(p, "completed") - count_status(p, "diverged");
    for (std::int64_t k : settings.multipliers) out << ',' << csv_cell(mean_loss(p, k));
    out << "\n";
  }
  io::atomic_write(path, out.str());
}

void write_branches_csv(const fs::path& path, const std::vector<CbsPoint>& points) {
  std::ostringstream out;
  out << "name,step,k,seed_index,order_seed,batch,steps,examples,status,val_loss\n";
  for (const CbsPoint& p : points) {
    for (const BranchResult& r : p.branches) {
      const Branch& b = r.branch;
      out << b.name << ',' << b.step << ',' << b.multiplier << ',' << b.seed_index << ','
          << b.order_seed << ',' << b.global_batch << ',' << b.steps << ',' << b.examples << ','
          << r.status << ',' << csv_cell(r.loss) << "\n";
    }
  }
  io::atomic_write(path, out.str());
}

std::string make_cbs_plot(const fs::path& out) {
  const fs::path log = out / "plot.log";
  fs::remove(log);  // this run's output only
  return run_plot_script("lbt_cbs_plot.py", {out.string()}, log);
}

}  // namespace lbt::experiments
