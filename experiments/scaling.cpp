// run_scaling; see scaling.hpp. Each run is a separate `mpirun` job, so one study needs no
// MPI in this process and a failing run cannot take the study down with it. Runs go to
// OUT/workers-K/repeat-R/ with their log beside them as OUT/workers-K/repeat-R.log.
#include "experiments/scaling.hpp"

#include <fcntl.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/lbt_schema.hpp"
#include "trainer/train_keys.hpp"

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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void min_max(const std::vector<double>& v, double& lo, double& hi) {
  const auto [min, max] = std::minmax_element(v.begin(), v.end());
  lo = *min;
  hi = *max;
}

std::string range(double mid, double lo, double hi, const char* format) {
  char text[128];
  const std::string f = std::string(format) + " [" + format + "-" + format + "]";
  std::snprintf(text, sizeof text, f.c_str(), mid, lo, hi);
  return text;
}

// scaling_runs.csv: the raw runs in the order they ran.
std::string runs_csv(const std::vector<ScalingRow>& runs, const std::vector<int>& positions) {
  std::string csv =
      "repeat,position,workers,global_batch,steps,epoch_time_s,samples_per_s,speedup,efficiency\n";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ScalingRow& r = runs[i];
    char line[256];
    std::snprintf(line, sizeof line, "%d,%d,%d,%lld,%lld,%.6g,%.6g,%.4f,%.4f\n", r.repeat,
                  positions[i], r.workers, static_cast<long long>(r.global_batch),
                  static_cast<long long>(r.steps), r.epoch_time_s, r.samples_per_s, r.speedup,
                  r.efficiency);
    csv += line;
  }
  return csv;
}

// scaling.csv: the original columns (now medians), then the spread over repeats.
std::string summary_csv(const std::vector<ScalingSummary>& rows, int cores) {
  std::string csv =
      "workers,global_batch,steps,epoch_time_s,samples_per_s,speedup,efficiency,cores,"
      "repeats,samples_per_s_min,samples_per_s_max,efficiency_min,efficiency_max\n";
  for (const ScalingSummary& r : rows) {
    char line[384];
    std::snprintf(line, sizeof line, "%d,%lld,%lld,%.6g,%.6g,%.4f,%.4f,%d,%d,%.6g,%.6g,%.4f,%.4f\n",
                  r.workers, static_cast<long long>(r.global_batch),
                  static_cast<long long>(r.steps), r.epoch_time_s, r.samples_per_s, r.speedup,
                  r.efficiency, cores, r.repeats, r.samples_per_s_min, r.samples_per_s_max,
                  r.efficiency_min, r.efficiency_max);
    csv += line;
  }
  return csv;
}

void print_table(const std::vector<ScalingSummary>& rows) {
  std::printf(
      "\nmedian [min-max] over %d repeat(s); speedup and efficiency against %d worker(s) "
      "of the same repeat:\n",
      rows.front().repeats, rows.front().workers);
  std::printf("%7s %12s %26s %9s %22s %22s\n", "workers", "global_batch", "samples/s", "epoch_s",
              "speedup", "efficiency");
  for (const ScalingSummary& r : rows) {
    std::printf("%7d %12lld %26s %9.2f %22s %22s\n", r.workers,
                static_cast<long long>(r.global_batch),
                range(r.samples_per_s, r.samples_per_s_min, r.samples_per_s_max, "%.0f").c_str(),
                r.epoch_time_s, range(r.speedup, r.speedup_min, r.speedup_max, "%.3f").c_str(),
                range(r.efficiency, r.efficiency_min, r.efficiency_max, "%.3f").c_str());
  }
}

}  // namespace

std::vector<int> repeat_order(const std::vector<int>& workers, int repeat) {
  std::vector<int> order = workers;
  if (!order.empty()) {
    const auto shift = static_cast<std::size_t>(repeat - 1) % order.size();
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(shift), order.end());
  }
  return order;
}

void set_speedups_per_repeat(std::vector<ScalingRow>& runs) {
  for (ScalingRow& run : runs) {
    const ScalingRow* ref = nullptr;
    for (const ScalingRow& other : runs) {
      if (other.repeat == run.repeat && (ref == nullptr || other.workers < ref->workers)) {
        ref = &other;
      }
    }
    run.speedup = ref->workers * run.samples_per_s / ref->samples_per_s;
    run.efficiency = run.speedup / run.workers;
  }
}

std::vector<ScalingSummary> summarise_scaling(std::vector<ScalingRow> runs) {
  if (runs.empty()) throw Error("summarise_scaling: no runs to summarise");
  set_speedups_per_repeat(runs);
  std::vector<int> counts;
  for (const ScalingRow& r : runs) counts.push_back(r.workers);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  std::vector<ScalingSummary> rows;
  for (int k : counts) {
    std::vector<double> throughput, speedup, efficiency;
    ScalingSummary row;
    for (const ScalingRow& r : runs) {
      if (r.workers != k) continue;
      throughput.push_back(r.samples_per_s);
      speedup.push_back(r.speedup);
      efficiency.push_back(r.efficiency);
      row.global_batch = r.global_batch;
      row.steps = r.steps;
      row.epoch_time_s = r.epoch_time_s * r.samples_per_s;  // examples per epoch, for now
    }
    row.workers = k;
    row.repeats = static_cast<int>(throughput.size());
    row.samples_per_s = median(throughput);
    row.epoch_time_s /= row.samples_per_s;
    min_max(throughput, row.samples_per_s_min, row.samples_per_s_max);
    row.speedup = median(speedup);
    min_max(speedup, row.speedup_min, row.speedup_max);
    row.efficiency = median(efficiency);
    min_max(efficiency, row.efficiency_min, row.efficiency_max);
    rows.push_back(row);
  }
  return rows;
}

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
                                              first.at("step").get<std::int64_t>()) *
                          row.global_batch;
  const double seconds = last.at("wall_time").get<double>() - first.at("wall_time").get<double>();
  row.samples_per_s = examples / std::max(seconds, 1e-9);
  row.epoch_time_s = static_cast<double>(steps_per_epoch * row.global_batch) / row.samples_per_s;
  return row;
}

namespace {

void check_scaling_options(const ScalingOptions& o) {
  if (o.workers.empty()) throw ConfigError("--workers is empty", "e.g. --workers 1,2,4");
  for (std::size_t i = 0; i < o.workers.size(); ++i) {
    if (o.workers[i] < 1 || (i > 0 && o.workers[i] <= o.workers[i - 1])) {
      throw ConfigError("--workers must be ascending counts >= 1", "e.g. --workers 1,2,4");
    }
  }
  if (o.steps < 2)
    throw ConfigError("--steps must be >= 2, got " + std::to_string(o.steps), "e.g. --steps 200");
  if (o.repeats < 1) {
    throw ConfigError("--repeats must be >= 1, got " + std::to_string(o.repeats),
                      "e.g. --repeats 3: each repeat runs every worker count once, and the "
                      "study reports the median with min-max over repeats");
  }
}

void print_study_header(const ScalingOptions& o, int cores) {
  std::string worker_list;
  for (int k : o.workers) worker_list += (worker_list.empty() ? "" : ",") + std::to_string(k);
  std::printf(
      "scaling study: %s, workers %s, %lld steps each, %s scaling, %d repeat(s) (worker "
      "order rotated by one each repeat); %d cores available\n",
      o.config.c_str(), worker_list.c_str(), static_cast<long long>(o.steps),
      o.weak ? "weak" : "strong", o.repeats, cores);
  if (o.workers.back() > cores) {
    std::printf(
        "warning: %d workers on %d cores: ranks beyond %d share cores (oversubscribed), so "
        "their times measure contention, not scaling\n",
        o.workers.back(), cores, cores);
  }
}

// One compute thread per rank: the study measures data parallelism, not threads.
void set_run_environment() {
  setenv("OMP_NUM_THREADS", "1", 1);
  setenv("OPENBLAS_NUM_THREADS", "1", 1);
  if (geteuid() == 0) {  // OpenMPI refuses root without these (CI runs as root)
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
}

// mpirun -np k ... lbt train, for a few steps of throughput into `run`.
std::vector<std::string> train_command(const ScalingOptions& o, int k, int cores,
                                       std::int64_t base_batch, const fs::path& run) {
  const std::int64_t log_every = std::max<std::int64_t>(1, o.steps / 10);
  std::vector<std::string> args = {o.mpirun, "-np", std::to_string(k), "--oversubscribe"};
  // Binding each rank to a core would refuse more ranks than cores.
  if (k > cores) args.insert(args.end(), {"--bind-to", "none"});
  args.insert(args.end(), o.mpirun_args.begin(), o.mpirun_args.end());
  args.insert(args.end(), {o.lbt.string(), "train", "--config", o.config.string(), "--quiet",
                           "--overwrite", "--out", run.string()});
  std::vector<std::string> sets = o.sets;
  sets.insert(sets.end(),
              {"train.threads=1", "train.steps=" + std::to_string(o.steps),
               "train.eval_every=" + std::to_string(o.steps),
               "train.log_every=" + std::to_string(log_every), "train.stop_at_target=false",
               // A throughput window of a few steps: no warmup (its LR does not change a
               // step's cost, and a preset's warmup in epochs may outlast the window).
               "schedule.warmup=0"});
  if (o.weak) sets.push_back("train.global_batch=" + std::to_string(base_batch * k));
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  return args;
}

// One run with k workers in repeat `repeat`: launched, waited for, and read back.
ScalingRow run_one(const ScalingOptions& o, int k, int repeat, int cores, std::int64_t base_batch) {
  const std::string tag = "repeat " + std::to_string(repeat) + "/" + std::to_string(o.repeats) +
                          ", workers " + std::to_string(k);
  const fs::path dir = o.out / ("workers-" + std::to_string(k));
  const fs::path run = dir / ("repeat-" + std::to_string(repeat));
  const fs::path log = dir / ("repeat-" + std::to_string(repeat) + ".log");
  fs::create_directories(dir);
  const std::vector<std::string> args = train_command(o, k, cores, base_batch, run);
  std::printf("%s: %s\n", tag.c_str(), join_command(args).c_str());
  std::fflush(stdout);
  const int rc = run_process(args, log);
  if (rc != 0) {
    throw Error("the run with " + std::to_string(k) + " workers (repeat " + std::to_string(repeat) +
                    ") exited with status " + std::to_string(rc) + "; its log " + log.string() +
                    " ends:\n" + tail(log, 1500),
                "run the command above by hand to see the failure");
  }
  ScalingRow row = read_scaling_run(run);
  row.workers = k;
  row.repeat = repeat;
  std::printf("%s: %.0f samples/s, epoch %.2f s\n", tag.c_str(), row.samples_per_s,
              row.epoch_time_s);
  return row;
}

void plot_scaling(const ScalingOptions& o, const fs::path& csv_path) {
  if (o.plot_script.empty() || !fs::exists(o.plot_script)) {
    std::printf("warning: no plot script at '%s'; scaling.csv is complete\n",
                o.plot_script.c_str());
    return;
  }
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
}

}  // namespace

std::vector<ScalingSummary> run_scaling(const ScalingOptions& o) {
  check_scaling_options(o);
  Config base = load_config(o.config, o.sets, &std::cerr);
  const std::int64_t base_batch =
      base.get_int(Schema::in(trainer::train_keys(), "train.global_batch"));
  const int cores = available_cores();
  print_study_header(o, cores);
  fs::create_directories(o.out);
  set_run_environment();

  // Interleaved repeats: a slow minute on a shared machine then hits every worker count of
  // one repeat alike (and rotation keeps it off the reference alone), not one K's only run.
  std::vector<ScalingRow> runs;
  std::vector<int> positions;  // 1-based place of each run in its repeat's order
  for (int repeat = 1; repeat <= o.repeats; ++repeat) {
    const std::vector<int> order = repeat_order(o.workers, repeat);
    for (std::size_t i = 0; i < order.size(); ++i) {
      runs.push_back(run_one(o, order[i], repeat, cores, base_batch));
      positions.push_back(static_cast<int>(i) + 1);
    }
  }

  set_speedups_per_repeat(runs);
  const fs::path runs_path = o.out / "scaling_runs.csv";
  io::atomic_write(runs_path, runs_csv(runs, positions));
  const std::vector<ScalingSummary> rows = summarise_scaling(runs);
  const fs::path csv_path = o.out / "scaling.csv";
  io::atomic_write(csv_path, summary_csv(rows, cores));
  print_table(rows);
  std::printf("wrote %s and %s (one row per run)\n", csv_path.c_str(), runs_path.c_str());
  plot_scaling(o, csv_path);
  return rows;
}

}  // namespace lbt::experiments
