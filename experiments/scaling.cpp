// run_scaling; see scaling.hpp. Each worker count is a separate `mpirun` job, so one study
// needs no MPI in this process and a failing run cannot take the study down with it.
#include "experiments/scaling.hpp"

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/io.hpp"

extern char** environ;

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

// Runs argv with stdout and stderr into `log`; returns the exit status (128 + signal if killed).
int run_process(const std::vector<std::string>& args, const fs::path& log) {
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    throw Error("could not start '" + args[0] + "': " + std::strerror(rc),
                "install openmpi-bin or pass --mpirun PATH");
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw Error("waitpid failed for '" + args[0] + "'");
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}

std::string tail(const fs::path& path, std::size_t max_chars) {
  std::string text;
  try {
    text = io::read_file(path);
  } catch (const Error&) {
    return "";
  }
  return text.size() > max_chars ? "..." + text.substr(text.size() - max_chars) : text;
}

std::string join_command(const std::vector<std::string>& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

ScalingRow read_scaling_run(const fs::path& run_dir) {
  const auto summary = nlohmann::json::parse(io::read_file(run_dir / "summary.json"));
  ScalingRow row;
  row.workers = summary.value("world_size", 0);
  row.global_batch = summary.value("global_batch", std::int64_t{0});
  row.steps = summary.value("steps", std::int64_t{0});
  const std::int64_t steps_per_epoch = summary.value("steps_per_epoch", std::int64_t{0});
  std::vector<nlohmann::json> lines;
  std::istringstream metrics(io::read_file(run_dir / "metrics.jsonl"));
  for (std::string line; std::getline(metrics, line);) {
    if (!line.empty()) lines.push_back(nlohmann::json::parse(line));
  }
  if (lines.size() < 2) {
    throw Error(run_dir.string() + "/metrics.jsonl has " + std::to_string(lines.size()) +
                    " lines; a throughput needs at least 2",
                "give the runs more steps (--steps) so that they log at least twice");
  }
  const auto& first = lines.front();
  const auto& last = lines.back();
  const double examples = static_cast<double>(last.at("step").get<std::int64_t>() -
                                              first.at("step").get<std::int64_t>()) * row.global_batch;
  const double seconds = last.at("wall_time").get<double>() - first.at("wall_time").get<double>();
  row.samples_per_s = examples / std::max(seconds, 1e-9);
  row.epoch_time_s = static_cast<double>(steps_per_epoch * row.global_batch) / row.samples_per_s;
  return row;
}

std::vector<ScalingRow> run_scaling(const ScalingOptions& o) {
  if (o.workers.empty()) throw ConfigError("--workers is empty", "e.g. --workers 1,2,4");
  for (std::size_t i = 0; i < o.workers.size(); ++i) {
    if (o.workers[i] < 1 || (i > 0 && o.workers[i] <= o.workers[i - 1])) {
      throw ConfigError("--workers must be ascending counts >= 1", "e.g. --workers 1,2,4");
    }
  }
  if (o.steps < 2) throw ConfigError("--steps must be >= 2, got " + std::to_string(o.steps), "e.g. --steps 200");
  Config base = Config::from_file(o.config);
  for (const auto& s : o.sets) base.set(s);
  const std::int64_t base_batch = base.get_int("train.global_batch", 128);

  const int cores = available_cores();
  std::printf("scaling study: %s, workers %s, %lld steps each, %s scaling; %d cores available\n",
              o.config.c_str(), [&] {
                std::string w;
                for (int k : o.workers) w += (w.empty() ? "" : ",") + std::to_string(k);
                return w;
              }().c_str(),
              static_cast<long long>(o.steps), o.weak ? "weak" : "strong", cores);
  if (o.workers.back() > cores) {
    std::printf("warning: %d workers on %d cores: ranks beyond %d share cores (oversubscribed), so "
                "their times measure contention, not scaling\n", o.workers.back(), cores, cores);
  }
  fs::create_directories(o.out);

  // One compute thread per rank: the study measures data parallelism, not threads.
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  if (geteuid() == 0) {  // OpenMPI refuses root without these (CI runs as root)
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  const std::int64_t log_every = std::max<std::int64_t>(1, o.steps / 10);

  std::vector<ScalingRow> rows;
  for (int k : o.workers) {
    const fs::path run = o.out / ("workers-" + std::to_string(k));
    const fs::path log = o.out / ("workers-" + std::to_string(k) + ".log");
    std::vector<std::string> args = {o.mpirun, "-np", std::to_string(k), "--oversubscribe"};
    if (k > cores) args.insert(args.end(), {"--bind-to", "none"});  // binding to cores would refuse
    args.insert(args.end(), o.mpirun_args.begin(), o.mpirun_args.end());
    args.insert(args.end(), {o.lbt.string(), "train", "--config", o.config.string(), "--quiet",
                             "--overwrite", "--out", run.string()});
    std::vector<std::string> sets = o.sets;
    sets.insert(sets.end(), {"train.threads=1", "train.steps=" + std::to_string(o.steps),
                             "train.eval_every=" + std::to_string(o.steps),
                             "train.log_every=" + std::to_string(log_every), "train.stop_at_target=false"});
    if (o.weak) sets.push_back("train.global_batch=" + std::to_string(base_batch * k));
    for (const auto& s : sets) args.insert(args.end(), {"--set", s});
    std::printf("workers %d: %s\n", k, join_command(args).c_str());
    std::fflush(stdout);
    const int rc = run_process(args, log);
    if (rc != 0) {
      throw Error("the run with " + std::to_string(k) + " workers exited with status " +
                      std::to_string(rc) + "; its log " + log.string() + " ends:\n" + tail(log, 1500),
                  "run the command above by hand to see the failure");
    }
    ScalingRow row = read_scaling_run(run);
    row.workers = k;
    rows.push_back(row);
    std::printf("workers %d: %.0f samples/s, epoch %.2f s\n", k, row.samples_per_s, row.epoch_time_s);
  }

  // Speedup and efficiency against the smallest worker count (normally 1).
  const ScalingRow& ref = rows.front();
  std::ostringstream csv;
  csv << "workers,global_batch,steps,epoch_time_s,samples_per_s,speedup,efficiency,cores\n";
  for (auto& row : rows) {
    row.speedup = ref.workers * row.samples_per_s / ref.samples_per_s;
    row.efficiency = row.speedup / row.workers;
    char line[256];
    std::snprintf(line, sizeof line, "%d,%lld,%lld,%.6g,%.6g,%.4f,%.4f,%d\n", row.workers,
                  static_cast<long long>(row.global_batch), static_cast<long long>(row.steps),
                  row.epoch_time_s, row.samples_per_s, row.speedup, row.efficiency, cores);
    csv << line;
  }
  const fs::path csv_path = o.out / "scaling.csv";
  io::atomic_write(csv_path, csv.str());
  std::printf("\n%s", csv.str().c_str());
  std::printf("wrote %s\n", csv_path.c_str());

  if (!o.plot_script.empty() && fs::exists(o.plot_script)) {
    std::vector<std::string> plot = {o.python, o.plot_script.string()};
    plot.insert(plot.end(), o.plot_args.begin(), o.plot_args.end());
    plot.insert(plot.end(), {csv_path.string(), o.out.string()});
    const fs::path plot_log = o.out / "plot.log";
    if (run_process(plot, plot_log) == 0) {
      std::printf("plots in %s (scaling_*.png)\n", o.out.c_str());
    } else {
      std::printf("warning: plotting failed (%s); scaling.csv is complete:\n%s\n",
                  join_command(plot).c_str(), tail(plot_log, 800).c_str());
    }
  } else {
    std::printf("warning: no plot script at '%s'; scaling.csv is complete\n", o.plot_script.c_str());
  }
  return rows;
}

}  // namespace lbt::experiments
