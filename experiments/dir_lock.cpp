// Sweep directory lock; see dir_lock.hpp.
#include "experiments/dir_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "core/io.hpp"

namespace lbt::experiments {
namespace {

// An exclusive owner's line: "COMMAND (pid N on host H)"; array tasks write "... (last: pid".
constexpr const char* kOwnerPid = " (pid ";

std::string this_host() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

// A process's start time (clock ticks since boot, /proc/PID/stat field 22), "" when it has none:
// with the pid it names one process, although pids are reused (pid_max is often 32768).
std::string start_time_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  std::getline(in, stat);
  const auto paren = stat.rfind(')');  // the name may hold spaces and parentheses
  if (paren == std::string::npos) return "";
  std::istringstream fields(stat.substr(paren + 1));
  std::string field;
  for (int i = 3; i <= 22 && fields >> field; ++i) {
    if (i == 3 && field == "Z") return "";  // a zombie's descriptors are closed already
    if (i == 22) return field;
  }
  return "";
}

// What the holder wrote: the line a refused sweep prints, then its start time.
struct Owner {
  std::string line;
  std::string started;
};

Owner read_owner(int fd) {
  char text[512] = {};
  const ssize_t n = ::pread(fd, text, sizeof text - 1, 0);
  std::istringstream in(n > 0 ? std::string(text, static_cast<std::size_t>(n)) : std::string());
  Owner o;
  std::getline(in, o.line);
  std::string started;
  if (in >> started >> o.started && started != "started") o.started.clear();
  return o;
}

// True when the owner is a whole sweep on this host whose process has ended: the lock is then
// held only by processes it left behind, its trials between fork and exec, dying with it
// (PR_SET_PDEATHSIG).
bool owner_has_exited(const Owner& o) {
  const auto pid_at = o.line.find(kOwnerPid);
  if (pid_at == std::string::npos) return false;  // array tasks: the line names only one
  const std::string rest = o.line.substr(pid_at + std::strlen(kOwnerPid));
  const auto on_host = rest.find(" on host ");
  if (on_host == std::string::npos || o.started.empty()) return false;
  const std::string host = rest.substr(on_host + 9, rest.size() - on_host - 10);  // drop ')'
  if (host != this_host()) return false;  // another node's pid means nothing here
  const pid_t pid = static_cast<pid_t>(std::atol(rest.substr(0, on_host).c_str()));
  return pid > 0 && start_time_of(pid) != o.started;
}

// A sweep killed a moment ago may leave a child it had just forked holding the lock until the
// kernel has finished killing it; that takes milliseconds, seconds on a loaded machine. Waits
// for it (up to 10 s) rather than refuse the rerun a user starts right after the kill. Returns
// 0 once locked, else the error.
int lock_after_owner_exit(int fd, int op) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::flock(fd, op) == 0) return 0;
    if (errno != EWOULDBLOCK || std::chrono::steady_clock::now() >= deadline) return errno;
  }
}

// The descriptor of `lock_file` a parent passed down (kInheritedLockFd): a sweep clears a
// trial's directory under its run.lock and the trial's lbt train goes on holding it through the
// same open file (flock belongs to the open file, which fork shares), so no third process can
// take the directory between the two; before 2026-11-28 the sweep released it first. Taken only
// when it is `lock_file` itself (same device and inode); the variable is removed, so nothing this
// process starts sees it, and the descriptor is closed on exec from here on. -1 otherwise.
int inherited_descriptor(const std::filesystem::path& lock_file) {
  const char* value = std::getenv(kInheritedLockFd);
  if (value == nullptr) return -1;
  char* end = nullptr;
  const long fd = std::strtol(value, &end, 10);
  const bool a_number = *value != '\0' && *end == '\0' && fd >= 3 && fd <= (1 << 20);
  ::unsetenv(kInheritedLockFd);  // `value` is not read after this
  struct stat held {};
  struct stat named {};
  if (!a_number || ::fstat(static_cast<int>(fd), &held) != 0 ||
      ::lstat(lock_file.c_str(), &named) != 0 || !S_ISREG(named.st_mode) ||
      held.st_dev != named.st_dev || held.st_ino != named.st_ino)
    return -1;
  ::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC);
  return static_cast<int>(fd);
}

[[noreturn]] void refuse(const std::filesystem::path& lock_file, const Owner& owner,
                         const std::string& command) {
  const std::string dir = lock_file.parent_path().string(), who = owner.line;
  const std::string what = command == "lbt sweep"     ? "sweep directory "
                           : command == "lbt train"   ? "run directory "
                           : command == "lbt scaling" ? "study directory "
                                                      : command + " directory ";
  if (owner_has_exited(owner)) {
    throw ConfigError(
        what + dir + " is still locked by processes that " + who + " left running after it exited",
        "list them with `fuser -v " + lock_file.string() + "`, stop them, then run again");
  }
  // A SLURM array task has no --out to choose (it was told so: 2026-11-29 audit).
  const bool array_task = std::getenv("SLURM_ARRAY_TASK_ID") != nullptr;
  throw ConfigError(what + dir + " is in use by " + (who.empty() ? "another " + command : who),
                    array_task ? "let that process end (a task started twice, or a --collect); "
                                 "then `lbt sweep ... --launcher slurm` submits what is left"
                               : "wait for that " + command +
                                     " to end (or stop it), or choose another --out; "
                                     "the lock is released when its process exits");
}

}  // namespace

DirLock::DirLock(const std::filesystem::path& lock_file, Mode mode, const char* command) {
  // O_CLOEXEC (open_own_file's): trials and plot scripts this process starts must not inherit the
  // lock, or a trial orphaned for a moment would keep the directory locked after the sweep died.
  fd_ = inherited_descriptor(lock_file);
  if (fd_ < 0) fd_ = io::open_own_file(lock_file, O_RDWR | O_CREAT);
  if (fd_ < 0) {
    throw Error("cannot open " + lock_file.string() + ": " + std::strerror(errno),
                "check that the directory is writable");
  }
  const int op = (mode == Mode::kExclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  if (::flock(fd_, op) != 0) {
    int err = errno;
    if (err == EWOULDBLOCK && owner_has_exited(read_owner(fd_))) {
      err = lock_after_owner_exit(fd_, op);
    }
    if (err != 0) {
      const Owner owner = read_owner(fd_);
      ::close(fd_);
      fd_ = -1;
      if (err != EWOULDBLOCK) {
        throw Error("cannot lock " + lock_file.string() + ": " + std::strerror(err),
                    "the file system may not support flock; use a local directory for --out");
      }
      refuse(lock_file, owner, command);
    }
  }
  const std::string who = std::string(command) +
                          (mode == Mode::kExclusive ? kOwnerPid : " array tasks (last: pid ") +
                          std::to_string(::getpid()) + " on host " + this_host() + ")\nstarted " +
                          start_time_of(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t w = ::pwrite(fd_, who.data(), who.size(), 0);
  }
}

void DirLock::check(const std::filesystem::path& lock_file, const char* command) {
  const int fd = ::open(lock_file.c_str(), O_RDONLY | O_CLOEXEC);  // flock needs no write access
  if (fd < 0) return;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    ::close(fd);  // free: released at once
    return;
  }
  const int err = errno;
  const Owner owner = read_owner(fd);
  ::close(fd);
  // Held: by its owner, or by what an exited owner left running (refuse() says which).
  if (err == EWOULDBLOCK) refuse(lock_file, owner, command);
}

DirLock::DirLock(DirLock&& other) noexcept : fd_(other.fd_) {
  other.fd_ = -1;
}

DirLock& DirLock::operator=(DirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

DirLock::~DirLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

}  // namespace lbt::experiments
