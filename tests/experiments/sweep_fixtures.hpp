// The e2e sweep suites' shared pieces (test_sweep_e2e.cpp, test_sweep_misuse_e2e.cpp): a tiny
// synthetic sweep's config, the trials' summary times, a sweep started in its own process group,
// a run's status. LBT_BINARY is the lbt under test (tests/experiments/CMakeLists.txt).
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "support/cli_runner.hpp"

namespace lbt::test::sweep_e2e {

namespace fs = std::filesystem;

// Seconds per trial: 4096 examples of d = 16; the budget in steps sets the trial's length.
inline fs::path write_config(const std::string& name, const std::string& target, int max_steps) {
  const fs::path p = scratch() / name;
  std::ofstream(p) << "[model]\nspec = \"linear:16-1\"\ninit = \"zero\"\n"
                   << "[data]\ndataset = \"synthetic-regression\"\nvalidation_size = 1024\n"
                   << "[data.synthetic]\nexamples = 4096\ndim = 16\nnoise = 0.5\n"
                   << "[train]\nglobal_batch = 32\ntarget = \"" << target << "\"\nlog_every = 50\n"
                   << "[optimizer]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.0\n"
                   << "[schedule]\nscaling = \"sqrt\"\n"  // reference_batch: the batch, 32
                   << "[sweep]\nbatch_sizes = [8, 32, 128, 512]\n"
                   << "lr_multipliers = [0.5, 2.0]\nmax_steps = " << max_steps
                   << "\neval_every_examples = 64\nlr_search = \"grid\"\n";
  return p;
}

inline std::map<std::string, fs::file_time_type> summary_times(const fs::path& sweep) {
  std::map<std::string, fs::file_time_type> t;
  for (const auto& e : fs::directory_iterator(sweep / "trials")) {
    if (fs::exists(e.path() / "summary.json"))
      t[e.path().filename()] = fs::last_write_time(e.path() / "summary.json");
  }
  return t;
}

// `lbt sweep --jobs 1 --no-plots` in its own process group (which holds the trials too), its
// output in `log`.
inline pid_t start_sweep(const fs::path& cfg, const fs::path& dir, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1), dup2(fd, 2);
    execl(LBT_BINARY, LBT_BINARY, "sweep", "--config", cfg.c_str(), "--jobs", "1", "--out",
          dir.c_str(), "--no-plots", static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

inline std::string status_of(const fs::path& run) {
  return nlohmann::json::parse(slurp(run / "summary.json")).value("status", "");
}

}  // namespace lbt::test::sweep_e2e
