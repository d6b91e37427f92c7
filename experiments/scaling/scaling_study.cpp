// run_scaling; see scaling.hpp. Each run is a separate `mpirun` job, so one study needs no
// MPI in this process and a failing run cannot take the study down with it. Runs go to
// OUT/workers-K/repeat-R/ with their log beside them as OUT/workers-K/repeat-R.log; with
// --compare, to OUT/VARIANT/workers-K/repeat-R/ (VARIANT a tag such as overlap_comm=true).
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/child_process.hpp"
#include "experiments/dir_lock.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/memory/memory_report.hpp"
#include "experiments/output_kind.hpp"
#include "experiments/plots.hpp"
#include "experiments/rank_agreement.hpp"
#include "experiments/scaling/scaling.hpp"
#include "experiments/scaling/scaling_compare.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/config/train_keys.hpp"
#include "trainer/data/load.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;
namespace {

// A worker count's run folder: OUT/[VARIANT/]workers-K.
constexpr std::string_view kRunsPrefix = "workers-";

// Runs argv with stdout and stderr into `log` in its own process group (spawn_logged: SIGINT or
// SIGTERM to lbt scaling reaches the whole run, mpirun's ranks too, and a killed study takes it
// with it; until 2026-11-29 the run went on writing after the study had exited). Returns the
// exit status (128 + signal if killed).
int run_process(const std::vector<std::string>& args, const fs::path& log) {
  if (find_executable(args[0]).empty())
    throw Error("could not start '" + args[0] + "': not found",
                "install openmpi-bin or pass --mpirun PATH");
  std::error_code ec;
  fs::remove(log, ec);  // this run's output alone (spawn_logged appends)
  const ChildExit e = wait_child(spawn_logged(args[0], {args.begin() + 1, args.end()}, log));
  return e.signal ? 128 + e.signal : e.exit_code;
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

// The --set list of one run: the user's, the variant's, the study's, and in weak scaling the
// global batch K x the variant's own.
std::vector<std::string> run_sets(const ScalingOptions& o, const ScalingVariant& v, int k,
                                  std::int64_t base_batch) {
  std::vector<std::string> sets = o.sets;
  if (!v.set.empty()) sets.push_back(v.set);
  const std::vector<std::string> study = study_sets(o.steps);
  sets.insert(sets.end(), study.begin(), study.end());
  if (o.weak) sets.push_back("train.global_batch=" + std::to_string(base_batch * k));
  return sets;
}

// `what` with a ConfigError's message prefixed by `where` (which variant, how many workers).
template <class F>
auto in_context(const std::string& where, F&& what) {
  try {
    return what();
  } catch (const ConfigError& e) {
    throw ConfigError(where + e.what(), e.hint());
  }
}

// Each variant's config resolved as `lbt train` resolves it on each worker count's ranks, so
// a combination it would refuse stops the study before any run. Returns each variant's global
// batch (weak scaling multiplies it).
std::vector<std::int64_t> check_variants(const ScalingOptions& o,
                                         const std::vector<ScalingVariant>& variants) {
  std::vector<std::int64_t> batches;
  for (const ScalingVariant& v : variants) {
    const std::string key = v.set.substr(0, v.set.find('='));
    for (const std::string& s : o.sets) {
      std::string set_key = s.substr(0, s.find('='));
      set_key.erase(set_key.find_last_not_of(" \t") + 1);
      set_key.erase(0, set_key.find_first_not_of(" \t"));
      if (!key.empty() && set_key == key) {
        throw ConfigError("--set " + s + " and --compare " + key + " set the same key",
                          "drop the --set: each variant sets " + key);
      }
    }
    const std::string where = v.set.empty() ? "" : "--compare " + v.set;
    std::vector<std::string> sets = o.sets;
    if (!v.set.empty()) sets.push_back(v.set);
    Config config = in_context(where.empty() ? "" : where + ": ",
                               [&] { return load_config(o.config, sets, nullptr); });
    batches.push_back(config.get_int(Schema::in(trainer::train_keys(), "train.global_batch")));
    for (int k : o.workers) {
      in_context((where.empty() ? "" : where + " ") + "at " + std::to_string(k) + " worker(s): ",
                 [&] {
                   Config run = load_config(o.config, run_sets(o, v, k, batches.back()), nullptr);
                   trainer::resolve_run_config(run, k);
                 });
    }
    // The data files, before mpirun starts a run to miss them (exit 3 as lbt train's).
    Config run = load_config(o.config, run_sets(o, v, o.workers.front(), batches.back()), nullptr);
    data_fingerprints(
        data::data_files(trainer::resolve_run_config(run, o.workers.front()).train.data));
  }
  return batches;
}

// Each rank holds a copy of the model, the data and its buffers: refuse the largest worker count
// where the machine cannot hold that many, before any run (lbt memory --probe --workers 64
// refused the MLP at 25 GiB; lbt scaling -w 64 launched it, 2026-11-29 audit). lbt memory's
// estimate per rank (this process's runtime for MPI's, a floor) times the ranks.
void check_ranks_fit(const ScalingOptions& o, const std::vector<ScalingVariant>& variants,
                     const std::vector<std::int64_t>& base_batches) {
  const int k = *std::max_element(o.workers.begin(), o.workers.end());
  const std::int64_t available = trainer::available_memory_bytes();
  if (k < 2 || available < 0) return;
  for (std::size_t i = 0; i < variants.size(); ++i) {
    MemoryOptions m;
    m.config_path = o.config;
    m.sets = run_sets(o, variants[i], k, base_batches[i]);
    m.workers = k;
    const std::int64_t need = k * memory_report(m).estimates.front().total();
    if (need <= available) continue;
    throw ConfigError("lbt scaling: " + std::to_string(k) + " ranks need about " +
                          trainer::format_bytes(need) + ", more than the " +
                          trainer::format_bytes(available) + " this machine has available",
                      "drop the largest worker counts, or measure on a larger machine (lbt "
                      "memory --workers K gives a rank's bytes)");
  }
}

void print_study_header(const ScalingOptions& o, const std::vector<ScalingVariant>& variants,
                        int cores) {
  std::string worker_list, variant_list;
  // Appended piece by piece: const char* + std::string&& draws GCC 12's false -Wrestrict.
  for (int k : o.workers) {
    if (!worker_list.empty()) worker_list += ',';
    worker_list += std::to_string(k);
  }
  for (const ScalingVariant& v : variants) {
    variant_list += variant_list.empty() ? ", variants " : ", ";
    variant_list += v.tag;
    if (&v == &variants.front()) variant_list += " (baseline)";
  }
  std::printf(
      "scaling study: %s, workers %s%s, %lld steps each, %s scaling, %d repeat(s) (run order "
      "rotated by one each repeat); %d cores available\n",
      o.config.c_str(), worker_list.c_str(), variants.size() > 1 ? variant_list.c_str() : "",
      static_cast<long long>(o.steps), o.weak ? "weak" : "strong", o.repeats, cores);
  if (variants.size() > 1) {
    const std::string key = variants.front().set.substr(0, variants.front().set.find('='));
    const std::string note = single_rank_note(key, o.workers.front());
    if (!note.empty()) std::printf("%s\n", note.c_str());
  }
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
}

// mpirun -np k ... lbt train, for a few steps of throughput into `run`.
std::vector<std::string> train_command(const ScalingOptions& o, int k,
                                       const std::vector<std::string>& sets, const fs::path& run) {
  std::vector<std::string> args = {o.mpirun};
  const std::vector<std::string> local = mpirun_local_args(k);
  args.insert(args.end(), local.begin(), local.end());
  args.insert(args.end(), o.mpirun_args.begin(), o.mpirun_args.end());
  args.insert(args.end(), {o.lbt.string(), "train", "--config", o.config.string(), "--quiet",
                           "--overwrite", "--out", run.string()});
  for (const auto& s : sets) args.insert(args.end(), {"--set", s});
  return args;
}

// One run of variant v with k workers in repeat `repeat`: launched, waited for, read back.
ScalingRow run_one(const ScalingOptions& o, const ScalingVariant& v, int k, int repeat,
                   std::int64_t base_batch) {
  const std::string tag = "repeat " + std::to_string(repeat) + "/" + std::to_string(o.repeats) +
                          (v.tag.empty() ? "" : ", " + v.tag) + ", workers " + std::to_string(k);
  const fs::path dir =
      (v.tag.empty() ? o.out : o.out / v.tag) / (std::string(kRunsPrefix) + std::to_string(k));
  const fs::path run = dir / ("repeat-" + std::to_string(repeat));
  const fs::path log = dir / ("repeat-" + std::to_string(repeat) + ".log");
  fs::create_directories(dir);
  const auto args = train_command(o, k, run_sets(o, v, k, base_batch), run);
  std::printf("%s: %s\n", tag.c_str(), join_command(args).c_str());
  std::fflush(stdout);
  const int rc = run_process(args, log);
  if (const int sig = o.interrupt_signal ? o.interrupt_signal() : 0) {
    throw Interrupted(sig,
                      "lbt scaling interrupted; its running measurement was stopped and the "
                      "study is incomplete",
                      "rerun the same command: it measures again from the start");
  }
  // lbt's own error and hint, without the launcher's lines around them; exit 2 (a config the
  // trainer alone could refuse: no GPU for model.device=cuda) stays exit 2.
  if (const std::optional<ErrorLines> lines = rc != 0 ? lbt_error_lines(log) : std::nullopt) {
    const std::string what = "the run " + tag + " exited with status " + std::to_string(rc) +
                             " (its log: " + log.string() + "): " + lines->error;
    const std::string hint = lines->hint.empty() ? "run the command above by hand" : lines->hint;
    if (rc == 2) throw ConfigError(what, hint);
    if (rc == 3) throw DataError(what, hint);  // exit 3 as lbt train's (it was 1)
    throw Error(what, hint);
  }
  if (rc != 0) {
    throw Error("the run " + tag + " exited with status " + std::to_string(rc) + "; its log " +
                    log.string() + " ends:\n" + tail(log, 1500),
                "run the command above by hand to see the failure");
  }
  ScalingRow row = read_scaling_run(run);
  row.variant = v.tag;
  row.workers = k;
  row.repeat = repeat;
  // 3 digits, as the table's: a 5 ms epoch read "epoch 0.00 s" at a fixed 2 decimals.
  std::printf("%s: %.4g samples/s, epoch %.3g s\n", tag.c_str(), row.samples_per_s,
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
  plot.insert(plot.end(), {csv_path.string(), o.out.string()});
  const fs::path plot_log = o.out / "plot.log";
  if (run_process(plot, plot_log) == 0) {
    std::printf("plots in %s (scaling_*.png)\n", o.out.c_str());
  } else if (const std::string module = missing_python_module(plot_log); !module.empty()) {
    std::printf("warning: %s; scaling.csv is complete\n", module.c_str());
  } else {
    std::printf("warning: plotting failed (%s); scaling.csv is complete:\n%s\n",
                join_command(plot).c_str(), tail(plot_log, 800).c_str());
  }
}

// The CSVs and the table; with several variants also scaling_compare.csv.
std::vector<ScalingSummary> write_results(const ScalingOptions& o,
                                          const std::vector<ScalingVariant>& variants,
                                          std::vector<ScalingRow> runs,
                                          const std::vector<int>& positions, int cores) {
  const bool compare = variants.size() > 1;
  set_speedups_per_repeat(runs);
  const fs::path runs_path = o.out / "scaling_runs.csv";
  io::atomic_write(runs_path, scaling_runs_csv(runs, positions, compare));
  // Repeat 1 runs unrotated, baseline first: summarise_scaling's variant order is the list's.
  const std::vector<ScalingSummary> rows = summarise_scaling(runs);
  const fs::path csv_path = o.out / "scaling.csv";
  io::atomic_write(csv_path, scaling_summary_csv(rows, cores, compare));
  if (compare) {
    std::vector<std::string> tags;
    for (const ScalingVariant& v : variants) tags.push_back(v.tag);
    const std::vector<VariantRatio> ratios = compare_variants(runs, tags);
    const fs::path compare_path = o.out / "scaling_compare.csv";
    io::atomic_write(compare_path, compare_csv(ratios));
    print_compare_table(rows, ratios);
    std::printf("wrote %s (ratios against %s)\n", compare_path.c_str(), tags.front().c_str());
  } else {
    print_scaling_table(rows);
  }
  std::printf("wrote %s and %s (one row per run)\n", csv_path.c_str(), runs_path.c_str());
  plot_scaling(o, csv_path);
  return rows;
}

}  // namespace

namespace {

// A finished study in `out` (its scaling.csv or scaling_runs.csv) is refused, or with
// `overwrite` removed whole: its CSVs, plots and run folders ([VARIANT/]workers-K), so no
// worker count of the old study is left beside the new one's results (a rerun replaced
// scaling.csv and left the old workers-2/, exit 0, 2026-11-28); an unfinished one's run
// folders are removed without asking. Other files stay.
void clear_old_study(const fs::path& out, bool overwrite) {
  std::error_code ec;
  const bool finished =
      fs::exists(out / "scaling.csv", ec) || fs::exists(out / "scaling_runs.csv", ec);
  // A study stopped before its tables (a signal) is measured again whole: its run folders go
  // too, or a rerun with other worker counts left them beside its results (2026-11-29 audit).
  if (finished && !overwrite) {
    throw ConfigError(out.string() + " holds a finished lbt scaling study (scaling.csv)",
                      "pass --overwrite to replace it, or choose another --out");
  }
  // Only what a study writes: workers-K with K a number, and a variant's KEY=VALUE folder of
  // those (any workers-* folder, and any folder of them, went: a user's workers-notes/ or a copy
  // of workers-1 in backup/, 2026-11-29 audit).
  const auto is_runs = [](const fs::path& p) {
    const std::string name = p.filename().string();
    const std::size_t digits = kRunsPrefix.size();
    return fs::is_directory(p) && name.size() > digits && name.starts_with(kRunsPrefix) &&
           std::all_of(name.begin() + digits, name.end(),
                       [](char c) { return c >= '0' && c <= '9'; });
  };
  for (const auto& entry : fs::directory_iterator(out)) {
    const fs::path& p = entry.path();
    const std::string name = p.filename().string();
    bool remove = is_runs(p) || name == "scaling.csv" || name == "scaling_runs.csv" ||
                  name == "scaling_compare.csv" || name == "plot.log" ||
                  (name.starts_with("scaling_") && p.extension() == ".png");
    if (!remove && name.find('=') != std::string::npos && fs::is_directory(p) &&
        !fs::is_empty(p)) {  // a --compare variant's folder
      remove = std::all_of(fs::directory_iterator(p), fs::directory_iterator(),
                           [&](const fs::directory_entry& e) { return is_runs(e.path()); });
    }
    if (remove) fs::remove_all(p);
  }
}

}  // namespace

std::vector<ScalingSummary> run_scaling(const ScalingOptions& o) {
  check_scaling_options(o);
  const std::vector<ScalingVariant> variants =
      o.compare.empty() ? std::vector<ScalingVariant>{{}} : parse_compare(o.compare);
  load_config(o.config, o.sets, &std::cerr);  // its notes once, not once per variant
  const std::vector<std::int64_t> base_batches = check_variants(o, variants);
  check_ranks_fit(o, variants, base_batches);
  refuse_other_output(o.out, OutputKind::kScaling, "lbt scaling");
  io::create_directories(o.out, "study directory");  // before the header, with a hint
  // One study per directory: a second one's runs would --overwrite the first's as they train.
  const DirLock lock(o.out / "scaling.lock", DirLock::Mode::kExclusive, "lbt scaling");
  clear_old_study(o.out, o.overwrite);
  const int cores = available_cores();
  print_study_header(o, variants, cores);
  set_run_environment();

  // Interleaved repeats: a slow minute on a shared machine then hits every (variant, worker
  // count) of one repeat alike (and rotation keeps it off the reference alone), not one
  // pair's only run.
  std::vector<ScalingRow> runs;
  std::vector<int> positions;  // 1-based place of each run in its repeat's order
  const int n = static_cast<int>(variants.size());
  for (int repeat = 1; repeat <= o.repeats; ++repeat) {
    const std::vector<StudyRun> order = repeat_runs(n, o.workers, repeat);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const StudyRun& s = order[i];
      runs.push_back(run_one(o, variants[static_cast<std::size_t>(s.variant)], s.workers, repeat,
                             base_batches[static_cast<std::size_t>(s.variant)]));
      positions.push_back(static_cast<int>(i) + 1);
    }
  }
  return write_results(o, variants, std::move(runs), positions, cores);
}

}  // namespace lbt::experiments
