// lbt cbs's branch processes; see cbs_branches.hpp.
#include "experiments/cbs/cbs_branches.hpp"

#include <signal.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/child_process.hpp"
#include "experiments/json_file.hpp"
#include "experiments/run_checkpoint.hpp"
#include "experiments/sweep/sweep_interrupt.hpp"
#include "experiments/sweep/sweep_results.hpp"
#include "experiments/sweep/trial_group.hpp"
#include "trainer/checkpoint.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

std::string set(const std::string& key, const std::string& value) {
  return key + "=" + value;
}

// The keys that make a run a branch: where it starts, its batch and length, its data order.
// No target and no noise scale (the reference's noise.jsonl has it), one evaluation at the end
// (its val_loss is what the branches are compared by), no final checkpoint (a finished branch
// is never continued); checkpoints by wall time stay, so a killed branch resumes.
std::vector<std::string> branch_sets(const Branch& b, const ReferenceRun& ref, int threads) {
  const std::int64_t end = b.step + b.steps;  // train.steps counts from 0
  const fs::path ckpt = trainer::checkpoint_path(fs::absolute(ref.dir) / "checkpoints", b.step);
  return {set("train.branch_from", "\"" + ckpt.string() + "\""),
          set("train.global_batch", std::to_string(b.global_batch)),
          set("train.micro_batch", std::to_string(ref.micro_batch)),
          set("train.accum_steps", std::to_string(b.global_batch / ref.micro_batch)),
          set("train.steps", std::to_string(end)),
          set("train.order_seed", std::to_string(b.order_seed)),
          set("train.threads", std::to_string(threads)),
          set("train.target", "\"\""),
          set("train.stop_at_target", "false"),
          set("train.prune_at_step", "0"),
          set("train.eval_every", std::to_string(end)),
          set("train.eval_growth", "1.0"),
          set("train.checkpoint_every", "0"),
          set("train.checkpoint_keep", "1"),
          set("train.checkpoint_final", "false"),
          set("noise.enabled", "false"),
          set("schedule.scaling", "\"" + ref.scaling + "\"")};
}

int branch_threads(int jobs) {
  return std::max(1, task_cores() / std::max(1, jobs));
}

// A branch whose outcome is measured needs no rerun; a failed one is run again (it was kept,
// and counted as outside the tolerance, until 2026-11-29: a crash read as a small CBS).
bool finished(const fs::path& dir) {
  return measured_outcome(trial_summary_text(dir, "status"));
}

// A branch directory of another length than `b`'s: the length is measured at the largest
// multiplier, so a rerun with more of them changes it, and a branch kept from the first run
// compared other training (a k = 4 branch of 20480 examples beside k = 1 and 2 of 2048,
// relabelled 20480; 2026-11-29 audit). Read from its config.toml's train.steps.
bool other_length(const fs::path& dir, const Branch& b) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "config.toml", ec)) return false;
  const auto keys = flatten_config(io::read_file(dir / "config.toml"));
  const auto it = keys.find("train.steps");
  return it != keys.end() && it->second != std::to_string(b.step + b.steps);
}

// Branches from a checkpoint since replaced by another of the same step (the reference rerun
// into its directory) trained other weights: a rerun kept them beside new ones (2026-11-29
// audit), so they run again. OUT/checkpoint_seals.json keeps the seal (CRC-32) of each checkpoint
// branched from; a directory from before it had none, and keeps its branches.
void forget_branches_of_replaced_checkpoints(const std::vector<Branch>& plan,
                                             const ReferenceRun& ref, const BranchRunOptions& o) {
  const fs::path& file = o.seals_file;
  nlohmann::json before = nlohmann::json::object(), now = nlohmann::json::object();
  if (fs::exists(file)) before = read_json_object(file, "remove it: lbt cbs writes it again");
  for (const Branch& b : plan) {
    const std::string step = std::to_string(b.step);
    if (!now.contains(step))
      now[step] =
          trainer::checkpoint_seal(trainer::checkpoint_path(ref.dir / "checkpoints", b.step));
    if (before.contains(step) && before[step] != now[step] && fs::exists(o.branches_dir / b.name)) {
      std::fprintf(stderr, "[cbs] %s: its checkpoint was replaced since it ran: run again\n",
                   b.name.c_str());
      fs::remove_all(o.branches_dir / b.name);
    }
  }
  before.update(now);  // steps not in this plan keep theirs
  io::atomic_write(file, before.dump(2) + "\n");
}

// summary.json of a branch that ended without writing its own final one.
void write_failed(const fs::path& dir, const ChildExit& e) {
  const std::string why = exit_text(e);
  const std::string log = tail_lines(dir / "train.log", 3);
  const nlohmann::json s = {{"status", "failed"}, {"error", why + (log.empty() ? "" : ": " + log)}};
  fs::create_directories(dir);
  io::atomic_write(dir / "summary.json", json_text_of_output(s));
}

}  // namespace

std::vector<std::string> branch_train_args(const Branch& branch, const ReferenceRun& ref,
                                           const fs::path& dir, int threads, bool resume) {
  std::vector<std::string> a = {"train", "--config",   fs::absolute(ref.config_path).string(),
                                "--out", dir.string(), "--quiet"};
  for (const std::string& s : branch_sets(branch, ref, threads)) a.insert(a.end(), {"--set", s});
  if (resume) a.insert(a.end(), {"--resume", dir.string()});
  return a;
}

int run_branches(const std::vector<Branch>& plan, const ReferenceRun& ref,
                 const BranchRunOptions& o) {
  refuse_live_trial_groups(o.branches_dir);
  forget_branches_of_replaced_checkpoints(plan, ref, o);
  std::vector<const Branch*> todo;
  for (const Branch& b : plan) {
    const fs::path dir = o.branches_dir / b.name;
    if (other_length(dir, b)) {
      std::fprintf(stderr,
                   "[cbs] %s: its length differs from this plan's %lld examples: run again\n",
                   b.name.c_str(), static_cast<long long>(b.examples));
      fs::remove_all(dir);
    }
    if (!finished(dir)) todo.push_back(&b);
  }
  const int threads = branch_threads(o.jobs);
  if (o.progress)
    std::fprintf(stderr, "[cbs] %zu branches, %zu to run, %d jobs x %d threads\n", plan.size(),
                 todo.size(), o.jobs, threads);
  std::map<pid_t, const Branch*> running;
  std::size_t next = 0, done = 0;
  // A branch directory another process holds (prepare_trial_dir's lock) or a link where its log
  // goes: no branch starts after it, the running ones end, then its error (exit 2).
  std::optional<ConfigError> refused;
  auto more = [&] { return next < todo.size() && !sweep_interrupted() && !refused; };
  while (more() || !running.empty()) {
    while (more() && static_cast<int>(running.size()) < o.jobs) {
      const Branch& b = *todo[next++];
      const fs::path dir = o.branches_dir / b.name;
      try {
        const PreparedTrial prepared = prepare_trial_dir(dir, threads);  // held on by the branch
        // Its place in the plan, as a sweep's trials: on several GPUs, branches spread over them.
        const auto index = static_cast<std::size_t>(&b - plan.data());
        const pid_t pid = spawn_logged(
            o.lbt, branch_train_args(b, ref, dir, threads, prepared.resume), dir / "train.log",
            {"LBT_TRIAL_INDEX=" + std::to_string(index)}, prepared.lock.descriptor());
        record_trial_group(dir, pid);
        running[pid] = &b;
      } catch (const ConfigError& e) {
        refused = e;
      }
    }
    if (running.empty()) break;
    const ChildExit e = wait_any_child();
    const auto it = running.find(e.pid);
    if (it == running.end()) continue;
    const Branch& b = *it->second;
    running.erase(it);
    const fs::path dir = o.branches_dir / b.name;
    forget_trial_group(dir);
    if (!finished(dir) && !stopped_by_interrupt(e)) write_failed(dir, e);
    ++done;
    if (o.progress) {
      const BranchResult r = read_branch_result(b, dir);
      char loss[32] = "-";  // a branch that failed or diverged has none
      if (std::isfinite(r.loss)) std::snprintf(loss, sizeof loss, "%.6g", r.loss);
      std::fprintf(stderr, "[cbs] %zu/%zu %s: %s, val_loss %s\n", done, todo.size(), b.name.c_str(),
                   r.status.c_str(), loss);
    }
  }
  if (refused) throw *refused;
  return static_cast<int>(done);
}

bool measured_outcome(const std::string& status) {
  return is_final_status(status) && status != "failed" && status != "timeout";
}

BranchResult read_branch_result(const Branch& branch, const fs::path& dir) {
  BranchResult r;
  r.branch = branch;
  r.loss = std::nan("");
  if (!fs::exists(dir / "summary.json")) {
    r.status = "missing";
    return r;
  }
  const nlohmann::json s = read_json_object(dir / "summary.json", "rerun lbt cbs: it reruns it");
  r.status = s.value("status", "missing");
  r.message = s.value("error", "");
  // A diverged branch's loss is no loss after the budget: it is outside any tolerance.
  if (r.status == "completed" && s.contains("final_val_loss") && s["final_val_loss"].is_number())
    r.loss = s["final_val_loss"].get<double>();
  return r;
}

}  // namespace lbt::experiments
