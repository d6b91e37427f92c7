// Finding and running the plotting scripts; see plots.hpp.
#include "experiments/plots.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string_view>

#ifndef LBT_SOURCE_DIR
#define LBT_SOURCE_DIR "."
#endif

extern char** environ;

namespace lbt::experiments {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPython = "/usr/bin/python3";

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

fs::path plot_script(const std::string& name) {
  if (const std::string dir = env_or_empty("LBT_NOTEBOOKS_DIR"); !dir.empty())
    return fs::path(dir) / name;
  const std::string source = env_or_empty("LBT_SOURCE_DIR");
  return fs::path(source.empty() ? LBT_SOURCE_DIR : source) / "notebooks" / name;
}

std::string run_plot_script(const std::string& name, const std::vector<std::string>& args,
                            const fs::path& log) {
  const fs::path script = plot_script(name);
  if (!fs::exists(script))
    return "plot script " + script.string() +
           " not found (set LBT_NOTEBOOKS_DIR to lbt's notebooks/)";
  if (!fs::exists(kPython)) return std::string(kPython) + " not found (install python3-matplotlib)";
  std::vector<std::string> words = {kPython, script.string()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!log.empty()) {
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW, 0644);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
  }
  // lbt's threads keep SIGINT and SIGTERM blocked (trainer/interrupt.hpp): python gets them.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, kPython, &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) return "could not start " + std::string(kPython) + " " + script.string();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  const std::string how = WIFEXITED(status)
                              ? "exited " + std::to_string(WEXITSTATUS(status))
                              : "was killed by signal " + std::to_string(WTERMSIG(status));
  if (const std::string module = missing_python_module(log); !module.empty())
    return script.filename().string() + " " + how + ": " + module;
  return script.filename().string() + " " + how +
         (log.empty() ? std::string() : "; see " + log.string());
}

std::string missing_python_module(const fs::path& log) {
  std::ifstream in(log);
  constexpr std::string_view kMarker = "ModuleNotFoundError: No module named '";
  std::string module;
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(kMarker);
    if (at == std::string::npos) continue;
    const auto begin = at + kMarker.size(), end = line.find('\'', begin);
    if (end != std::string::npos) module = line.substr(begin, end - begin);
  }
  if (module.empty()) return "";
  const std::string top = module.substr(0, module.find('.'));
  return std::string(kPython) + " has no module " + top + " (apt-get install python3-" + top +
         "), so the figures were skipped";
}

}  // namespace lbt::experiments
