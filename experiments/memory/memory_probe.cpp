// `lbt memory --probe`'s runs; see memory_probe.hpp.
#include "experiments/memory/memory_probe.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/child_process.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/memory_estimate.hpp"

namespace lbt::experiments {
namespace {

namespace fs = std::filesystem;

// mpirun -np N lbt, launched as lbt scaling launches its runs (child_process.hpp).
std::vector<std::string> mpirun_args(int workers) {
  std::vector<std::string> args = mpirun_local_args(workers);
  args.push_back(self_executable().string());
  return args;
}

// Runs program args with output into `log`; Error with its last lines unless it exits 0.
ChildExit run_logged(const fs::path& program, const std::vector<std::string>& args,
                     const fs::path& log, const std::string& what, const std::string& hint) {
  const ChildExit e = wait_child(spawn_logged(program, args, log));
  if (e.exit_code != 0) {
    throw Error("lbt memory --probe: " + what + " failed (" +
                    (e.signal ? "signal " + std::to_string(e.signal)
                              : "exit " + std::to_string(e.exit_code)) +
                    "): " + tail_lines(log, 3),
                hint);
  }
  return e;
}

// summary.json's peak_rss_bytes: one per rank.
std::vector<std::int64_t> read_peaks(const fs::path& run, int workers) {
  const auto summary = nlohmann::json::parse(io::read_file(run / "summary.json"));
  std::vector<std::int64_t> peaks;
  if (summary.contains("peak_rss_bytes"))
    for (const auto& p : summary["peak_rss_bytes"]) peaks.push_back(p.get<std::int64_t>());
  if (std::ssize(peaks) != workers)
    throw Error(run.string() + "/summary.json has no peak_rss_bytes for " +
                std::to_string(workers) + " ranks");
  return peaks;
}

// `lbt train` at micro-batch b on setup.workers ranks for 2 steps into dir; each rank's peak.
std::vector<std::int64_t> probe_once(const ProbeSetup& o, std::int64_t b, const fs::path& dir) {
  std::string name = std::to_string(b);
  name.insert(0, 1, 'b');  // not "b" + ...: GCC 12 warns falsely (-Wrestrict, PR 105329)
  const fs::path run = dir / name;
  std::vector<std::string> args{
      "train", "--config", o.config_path.string(), "--quiet", "--overwrite", "--out", run.string()};
  std::vector<std::string> sets = o.sets;
  sets.push_back("train.global_batch=" + std::to_string(b * o.workers));
  sets.push_back("train.micro_batch=" + std::to_string(b));
  sets.push_back("train.threads=" + std::to_string(o.threads));
  // A constant LR: the schedule allocates nothing, and a preset's warmup outlasts 2 steps.
  sets.insert(sets.end(),
              {"train.accum_steps=0", "train.steps=2", "schedule.recipe=none",
               "schedule.scaling=none", "schedule.warmup=0", "schedule.decay=constant"});
  for (const std::string& s : sets) args.insert(args.end(), {"--set", s});
  const std::string what = "lbt train at micro-batch " + std::to_string(b) + " on " +
                           std::to_string(o.workers) + " rank(s)";
  const std::string hint = "run it alone: lbt train --config " + o.config_path.string() +
                           " --set train.micro_batch=" + std::to_string(b);
  const fs::path log = dir / (name + ".log");
  if (o.workers == 1) return {run_logged(self_executable(), args, log, what, hint).max_rss_bytes};
  std::vector<std::string> launch = mpirun_args(o.workers);
  launch.insert(launch.end(), args.begin(), args.end());
  run_logged(find_mpirun(), launch, log, what, hint);
  return read_peaks(run, o.workers);
}

fs::path scratch_dir() {
  const fs::path dir = fs::temp_directory_path() / ("lbt-memory-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir;
}

}  // namespace

fs::path find_mpirun() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');) {
    const fs::path candidate = fs::path(d.empty() ? "." : d) / "mpirun";
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  throw ConfigError("lbt memory --probe --workers N launches mpirun, and none is on PATH",
                    "install openmpi-bin, or probe one rank (--workers 1)");
}

std::vector<ProbePeaks> run_probes(const ProbeSetup& o, const std::vector<std::int64_t>& bs) {
  const fs::path dir = scratch_dir();
  std::vector<ProbePeaks> peaks;
  try {
    for (std::int64_t b : bs) peaks.push_back({b, probe_once(o, b, dir)});
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  return peaks;
}

std::vector<std::int64_t> measure_mpi_runtime(const ProbeSetup& o) {
  const fs::path dir = scratch_dir();
  const fs::path log = dir / "mpi-runtime.log";
  std::vector<std::string> args = mpirun_args(o.workers);
  args.insert(args.end(), {"memory", "--config", o.config_path.string(), "--mpi-runtime"});
  std::vector<std::int64_t> bytes;
  try {
    run_logged(find_mpirun(), args, log, "measuring an MPI rank's baseline",
               "run it alone: mpirun -np " + std::to_string(o.workers) +
                   " lbt memory --config FILE --mpi-runtime");
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("mpi-runtime-bytes:", 0) != 0) continue;
      std::istringstream values(line.substr(18));
      for (long long v; values >> v;) bytes.push_back(v);
    }
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  if (std::ssize(bytes) != o.workers)
    throw Error("lbt memory --mpi-runtime printed no baseline for " + std::to_string(o.workers) +
                " ranks");
  return bytes;
}

void mpi_runtime_main() {
  comm::Communicator& comm = comm::process_communicator();
  // What run_training does before it loads data: check_ranks_agree's broadcast and allreduce.
  std::vector<std::byte> text(4096);
  comm.broadcast(text, 0);
  std::vector<double> rss(static_cast<std::size_t>(comm.size()), 0.0);
  comm.barrier();
  rss[static_cast<std::size_t>(comm.rank())] = static_cast<double>(trainer::resident_bytes_now());
  comm.allreduce(rss, comm::ReduceOp::kSum);
  if (comm.rank() != 0) return;
  std::printf("mpi-runtime-bytes:");
  for (double r : rss) std::printf(" %lld", static_cast<long long>(r));
  std::printf("\n");
}

}  // namespace lbt::experiments
