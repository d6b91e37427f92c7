// Batch-size sweep runner; see sweep.hpp.
#include "experiments/sweep/sweep.hpp"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include <signal.h>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/child_process.hpp"
#include "experiments/dir_lock.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/sweep/exec_command.hpp"
#include "experiments/sweep/exec_trial.hpp"
#include "experiments/sweep/plan_run.hpp"
#include "experiments/sweep/sweep_checks.hpp"
#include "experiments/sweep/sweep_interrupt.hpp"
#include "experiments/sweep/sweep_plan.hpp"
#include "experiments/sweep/sweep_progress.hpp"
#include "experiments/sweep/sweep_results.hpp"
#include "experiments/sweep/sweep_search.hpp"
#include "experiments/sweep/sweep_slurm.hpp"
#include "experiments/sweep/sweep_summary.hpp"
#include "experiments/sweep/trial_group.hpp"
#include "experiments/sweep/trial_lifecycle.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

class SweepRunner {
 public:
  SweepRunner(const SweepOptions& o) : options_(o) {}

  SweepOutcome run() {
    prepare();
    if (options_.check_only) {
      SweepOutcome checked;
      checked.trials = static_cast<int>(plan_.size());
      return checked;
    }
    SweepOutcome out;
    out.dir = dir_;
    out.trials = static_cast<int>(plan_.size());
    for (const auto& t : plan_) results_.push_back(read_result(t));
    grow();
    check_unreadable_summaries(results_, dir_ / "trials", options_.collect_only);
    warn_other_kernels(results_, dir_ / "trials");
    resolve_trial_name();
    if (options_.launcher == "slurm" && !array_task() && !options_.collect_only) {
      write_slurm_script();
      return out;
    }
    std::vector<int> todo = trials_to_run(out);
    if (options_.progress && !options_.collect_only) {
      // The LR search and the seeds add trials: "27 trials" of a sweep that ran 84 misread.
      const bool grows = settings_.lr_search == "adaptive" || settings_.seeds > 1;
      std::fprintf(
          stderr,
          "[sweep] %s: %zu trials%s, %zu to run (%d finished before), %d jobs x %d threads\n",
          dir_.c_str(), plan_.size(),
          grows ? " so far (the LR search and the seeds add more as results come in)" : "",
          todo.size(), out.skipped, jobs_, threads_);
    }
    // Processes of an earlier sweep's trial would write into the directory a trial now clears.
    if (!options_.collect_only) {
      if (array_task())
        refuse_live_trial_groups(dir_ / "trials", plan_[options_.trial_index].name);
      else
        refuse_live_trial_groups(dir_ / "trials");
    }
    run_trials(todo);
    if (busy_trial_) throw *busy_trial_;
    if (shared_failure_) throw shared_failure_error(shared_failure_trial_, *shared_failure_);
    out.ran = static_cast<int>(todo.size());
    out.trials = static_cast<int>(plan_.size());  // the search and the seeds added trials
    write_tables();
    if ((out.interrupt_signal = sweep_interrupt_signal())) return out;  // no fit, no plots
    summarise_sweep(dir_, results_, settings_.target, options_.trial_index, options_.plots, out);
    return out;
  }

 private:
  // The plan's trials this invocation runs (to_run; its own only in an array task).
  std::vector<int> trials_to_run(SweepOutcome& out) const {
    if (options_.trial_index >= static_cast<int>(plan_.size())) {
      throw ConfigError("--trial-index " + std::to_string(options_.trial_index) +
                            " is past the plan's " + std::to_string(plan_.size()) + " trials",
                        "plan indices run from 0 to " + std::to_string(plan_.size() - 1));
    }
    std::vector<int> todo;
    for (const auto& t : plan_) {
      if (options_.collect_only) break;
      if (options_.trial_index >= 0 && t.index != options_.trial_index) continue;
      if (!to_run(results_[t.index].status)) {
        ++out.skipped;
        continue;
      }
      todo.push_back(t.index);
    }
    return todo;
  }

  void prepare() {
    if (options_.launcher != "local" && options_.launcher != "slurm") {
      throw ConfigError("--launcher '" + options_.launcher + "' is not local or slurm",
                        "use --launcher local");
    }
    if (options_.jobs < 1) throw ConfigError("--jobs must be >= 1", "e.g. --jobs 2");
    refuse_trial_keys(options_.sets);
    config_ = load_config(options_.config_path, options_.sets, &std::cerr);
    settings_ =
        read_sweep_settings(config_, options_.batch_sizes, options_.lr_trials, options_.target);
    plan_ = make_plan(settings_);
    if (options_.exec_command.empty()) {
      data_ = validate_trial_configs(config_, plan_);
    } else {
      // A program's trials get no prune step (the protocol has none); an unknown placeholder
      // or an unterminated quote fails now, not in N trials.
      settings_.search.prune = false;
      check_exec_template(options_.exec_command, plan_.front(), settings_.base_seed);
    }
    dir_ = options_.out.empty()
               ? fs::path("runs") / ("sweep-" + options_.config_path.stem().string())
               : options_.out;
    if (options_.launcher == "slurm") check_slurm_script_inputs(options_, settings_, dir_);
    check_sweep_directory(dir_, options_.collect_only, options_.check_only);
    if (options_.check_only) {  // and another plan in it; nothing is written
      check_same_plan(dir_, manifest(), trial_base_config(options_.config_path), options_);
      return;
    }
    io::create_directories(dir_ / "trials", "sweep directory");
    dir_ = fs::canonical(dir_);
    // Before anything in the directory is read or written: a second sweep on it would run the
    // same trials again and clear the first one's running trials as "unfinished".
    lock_ = DirLock(dir_ / "sweep.lock",
                    array_task() ? DirLock::Mode::kShared : DirLock::Mode::kExclusive);
    lbt_ = options_.lbt_binary.empty() ? self_executable() : options_.lbt_binary;
    jobs_ = array_task() ? 1 : options_.jobs;
    threads_ = std::max(1, task_cores() / jobs_);
    const std::string base_config = trial_base_config(options_.config_path);
    check_same_plan(dir_, manifest(), base_config, options_);
    if (array_task() && fs::exists(dir_ / "base_config.toml")) return;
    io::atomic_write(dir_ / "base_config.toml", base_config);
    io::atomic_write(dir_ / "sweep.json",
                     with_base_config_seal(manifest(), base_config).dump(2) + "\n");
  }

  nlohmann::json manifest() const {
    return sweep_manifest(options_.config_path, settings_, plan_, options_.exec_command,
                          options_.sets, data_);
  }

  fs::path trial_dir(const Trial& t) const { return dir_ / "trials" / t.name; }

  TrialResult read_result(const Trial& t) const {
    return read_trial_result(t, trial_dir(t), !options_.exec_command.empty());
  }

  bool array_task() const { return options_.trial_index >= 0 || !options_.trial_name.empty(); }

  // The trials the finished ones decide (LR search, seeds), outside array tasks: added, returned.
  std::vector<int> grow() {
    const std::size_t before = plan_.size();
    grow_plan(
        settings_, plan_, results_, [&](const Trial& t) { return read_result(t); }, decisions_);
    std::vector<int> added;
    for (std::size_t i = before; i < plan_.size(); ++i) {
      if (!is_final_status(results_[i].status)) added.push_back(static_cast<int>(i));
    }
    return added;
  }

  // --trial NAME (the SLURM array's way to name its trial: indices of a growing plan may move).
  void resolve_trial_name() {
    if (options_.trial_name.empty()) return;
    for (const Trial& t : plan_) {
      if (t.name == options_.trial_name) {
        options_.trial_index = t.index;
        return;
      }
    }
    throw ConfigError("--trial " + options_.trial_name + " is not in the sweep's plan",
                      "run the sbatch script that `lbt sweep --launcher slurm` wrote last");
  }

  std::vector<std::string> child_args(const Trial& t, bool resume) const {
    // No --overwrite: run_trials has just emptied the directory but for train.log, which this
    // process holds open (replacing the directory would send the log into the deleted one).
    std::vector<std::string> a = {"train", "--config", (dir_ / "base_config.toml").string()};
    a.insert(a.end(), {"--out", trial_dir(t).string(), "--quiet", "--set",
                       "train.threads=" + std::to_string(threads_)});
    for (const auto& s : trial_sets(options_.sets)) a.insert(a.end(), {"--set", s});
    for (const auto& s : t.overrides) a.insert(a.end(), {"--set", s});
    if (resume) a.insert(a.end(), {"--resume", trial_dir(t).string()});
    return a;
  }

  struct Running {
    int index;
    TrialClock clock;
  };

  void run_trials(std::vector<int>& todo) {
    std::map<pid_t, Running> running;  // pid (its process group's id) -> trial
    // A crash of the sweep (an exception out of here) takes the trials' groups with it.
    struct KillOnUnwind {
      std::map<pid_t, Running>& running;
      ~KillOnUnwind() {
        for (const auto& [pid, r] : running) ::kill(-pid, SIGKILL);
        for (const auto& [pid, r] : running) {
          try {
            wait_child(pid);
          } catch (const Error&) {  // already reaped: nothing left to wait for
          }
        }
      }
    } guard{running};
    std::size_t next = 0;
    int done = 0;
    const auto start = Clock::now();
    const double limit =
        effective_trial_timeout(settings_.trial_timeout, !options_.exec_command.empty());
    // After a signal or a failure every trial shares no trial starts; the running ones end.
    auto more = [&] {
      return next < todo.size() && !sweep_interrupted() && !shared_failure_ && !busy_trial_;
    };
    auto fill = [&] {
      while (more() && static_cast<int>(running.size()) < jobs_) {
        const Trial t = plan_[todo[next++]];
        if ((busy_trial_ = trial_directory_in_use(trial_dir(t)))) break;
        try {  // taken since that look (prepare_trial_dir's lock), or a link where its log goes
          const pid_t pid = start_trial(t);
          running[pid] = {t.index, start_trial_clock(limit)};
        } catch (const ConfigError& e) {
          busy_trial_ = e;
          break;
        }
        results_[t.index].status = "running";
      }
    };
    // None running after fill(): the plan is done, or a trial was refused (waitid: ECHILD).
    while ((fill(), !running.empty())) {
      const std::optional<ChildExit> e = wait_for_trial(running);
      if (!e) {  // a time limit passed, or a look after a signal is due
        stop_reminder_.look(trial_names(running));
        continue;
      }
      auto it = running.find(e->pid);
      if (it == running.end()) continue;
      const Trial t = plan_[it->second.index];  // a copy: grow() may reallocate the plan
      const TrialClock clock = it->second.clock;
      running.erase(it);
      finish_trial(t, *e, clock);
      const TrialResult ended = results_[t.index];
      if (options_.exec_command.empty()) note_shared_failure(t, *e);
      ++done;
      if (!array_task()) {
        for (int i : grow()) todo.push_back(i);
      }
      fill();  // the next trials start before the tables and the progress line count them
      write_tables();
      if (options_.progress) {
        const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
        print_trial_progress(ended, {done, todo.size() - next, running.size()}, elapsed);
      }
    }
  }

  // A trial that failed as every trial would (shared_failure) is left unfinished, its verdict
  // removed, so a rerun once the machine is fixed runs it; the first such failure ends the sweep.
  void note_shared_failure(const Trial& t, const ChildExit& e) {
    std::optional<ErrorLines> f = shared_failure(e, trial_dir(t));
    if (!f) return;
    fs::remove(trial_dir(t) / "summary.json");
    results_[t.index] = read_result(t);
    if (shared_failure_) return;
    shared_failure_ = std::move(f);
    shared_failure_trial_ = t.name;
  }

  // The next trial to end, or nullopt when a time limit passes first (its group signalled).
  std::optional<ChildExit> wait_for_trial(std::map<pid_t, Running>& running) const {
    auto next_look = stop_reminder_.next_look();
    for (auto& [pid, r] : running)
      next_look = std::min(next_look, enforce_trial_clock(pid, r.clock));
    if (next_look == TrialClockPoint::max()) return wait_any_child();
    return wait_any_child_until(next_look);
  }

  std::vector<std::string> trial_names(const std::map<pid_t, Running>& running) const {
    std::map<int, std::string> by_index;  // in the plan's order, not the pids'
    for (const auto& [pid, r] : running) by_index[r.index] = plan_[r.index].name;
    std::vector<std::string> names;
    for (const auto& [index, name] : by_index) names.push_back(name);
    return names;
  }

  // An unfinished trial continues from its checkpoint, or starts clean (sweep_interrupt); a
  // program (--exec) starts clean: the protocol has no resume. Returns its pid.
  pid_t start_trial(const Trial& t) {
    PreparedTrial prepared;  // its lock passes to the trial's lbt train, then closes here
    if (options_.exec_command.empty()) {
      prepared = prepare_trial_dir(trial_dir(t), threads_);
    } else {
      fs::remove_all(trial_dir(t));
      fs::create_directories(trial_dir(t));
    }
    const pid_t pid = spawn_trial(t, prepared);
    record_trial_group(trial_dir(t), pid);
    return pid;
  }

  // The program's argument words (exec_command.hpp): no value is ever read as shell code;
  // command.sh holds the command as one shell line. Every trial's environment names its place in
  // the plan, LBT_TRIAL_INDEX (a trial on model.device=cuda takes GPU index mod GPUs).
  pid_t spawn_trial(const Trial& t, const PreparedTrial& prepared) {
    std::vector<std::string> env{"LBT_TRIAL_INDEX=" + std::to_string(t.index)};
    if (options_.exec_command.empty())
      return spawn_logged(lbt_, child_args(t, prepared.resume), trial_dir(t) / "train.log", env,
                          prepared.lock.descriptor());
    for (auto& variable : exec_thread_environment(threads_)) env.push_back(std::move(variable));
    const ExecCommand command = build_exec_command(
        options_.exec_command, placeholder_values(t, settings_.base_seed, trial_dir(t), threads_));
    io::atomic_write(trial_dir(t) / "command.sh", shell_line(command.argv) + "\n");
    const std::vector<std::string> args(command.argv.begin() + 1, command.argv.end());
    return spawn_logged(command.argv.front(), args, trial_dir(t) / "program.log", env);
  }

  // One trial's files never end the sweep: whatever reading or writing them throws (a program
  // that removed its directory, made a file unreadable) makes that trial failed.
  void finish_trial(const Trial& t, const ChildExit& e, const TrialClock& clock) {
    forget_trial_group(trial_dir(t));
    try {
      const trainer::Target program_target = trainer::parse_target(settings_.target);
      results_[t.index] = settle_trial(t, trial_dir(t), e, clock,
                                       options_.exec_command.empty() ? nullptr : &program_target);
    } catch (const std::exception& error) {
      TrialResult r;
      r.trial = t;
      r.status = "failed";
      r.message = std::string("its run directory could not be read or written: ") + error.what();
      results_[t.index] = r;
    }
  }

  void write_tables() {
    // Array tasks each see only their own trial; rescan so the CSVs hold every finished one.
    if (options_.trial_index >= 0) {
      for (const auto& t : plan_) {
        if (t.index != options_.trial_index) results_[t.index] = read_result(t);
      }
    }
    write_sweep_csv(dir_ / "sweep.csv", results_, dir_);
    write_best_csv(dir_ / "best.csv", results_, dir_, decisions_);
  }

  // Not final, or failed where --retry-failed asks again (SLURM's array left those out).
  bool to_run(const std::string& st) const {
    return !is_final_status(st) || (options_.retry_failed && (st == "failed" || st == "timeout"));
  }

  // The SLURM array for the trials decided so far and still to run (sweep_slurm.hpp).
  void write_slurm_script() {
    std::vector<std::string> pending;
    for (const TrialResult& r : results_)
      if (to_run(r.status)) pending.push_back(r.trial.name);
    write_slurm_array({dir_, lbt_, options_, settings_, pending, plan_.size()});
  }

  SweepOptions options_;
  Config config_;
  SweepSettings settings_;
  std::vector<Trial> plan_;
  std::vector<std::string> data_;  // the trials' data files' fingerprints (sweep.json)
  std::vector<TrialResult> results_;
  std::map<std::int64_t, std::string> decisions_;  // the LR search's last word per batch size
  fs::path dir_, lbt_;
  DirLock lock_;  // held until the runner ends
  int jobs_ = 1, threads_ = 1;
  std::optional<ErrorLines> shared_failure_;  // the first trial's (note_shared_failure)
  std::string shared_failure_trial_;
  std::optional<ConfigError> busy_trial_;  // a trial another process trains: none starts after
  StopReminder stop_reminder_;             // names the trials still running after a signal
};

}  // namespace

SweepOutcome run_sweep(const SweepOptions& options) {
  return SweepRunner(options).run();
}

}  // namespace lbt::experiments
