// Background `lbt` processes for end-to-end tests that signal them: start one in its own
// process group with its output in a log file, wait for it with a deadline, find its children,
// and read the JSON files it writes. Needs LBT_BINARY (see tests/e2e/CMakeLists.txt).
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace lbt::test {

// Starts `lbt args` (a shell word list) in its own process group, stdout and stderr to `log`.
inline pid_t start_lbt(const std::string& args, const std::filesystem::path& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    const std::string cmd =
        "exec " + std::string(LBT_BINARY) + " " + args + " >" + log.string() + " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);
  return pid;
}

// Polls `ready()` every `step` until it holds or `seconds` pass; whether it held.
template <class Ready>
bool wait_until(Ready ready, double seconds,
                std::chrono::microseconds step = std::chrono::milliseconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!ready()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
  return true;
}

// Waits up to `seconds` for the process; returns its wait status, or -1 after killing its
// process group (a hang).
inline int wait_for(pid_t pid, double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid, &status, WNOHANG) == pid) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill(-pid, SIGKILL);
  waitpid(pid, &status, 0);
  return -1;
}

// The pids whose parent is `parent` (from /proc/PID/stat).
inline std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream in(e.path() / "stat");
    std::string stat;
    std::getline(in, stat);
    // "pid (comm) state ppid ...": comm may hold spaces, so read after the last ')'.
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent &&
        state != 'Z') {
      out.push_back(static_cast<pid_t>(std::stol(name)));
    }
  }
  return out;
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace lbt::test
