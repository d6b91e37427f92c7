// Sweep directory lock; see dir_lock.hpp.
#include "experiments/dir_lock.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>

#include "core/error.hpp"

namespace lbt::experiments {
namespace {

constexpr const char* kOwnerPrefix = "lbt sweep (pid ";

std::string this_host() {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  return host;
}

// The owner line the holder wrote, without its newline.
std::string read_owner(int fd) {
  char owner[256] = {};
  const ssize_t n = ::pread(fd, owner, sizeof owner - 1, 0);
  std::string who = n > 0 ? std::string(owner, static_cast<std::size_t>(n)) : std::string();
  while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
  return who;
}

// True when the line names a whole sweep on this host whose process has ended (or is a zombie,
// whose descriptors are already closed): the lock is then held only by processes it left
// behind, and those are its trials between fork and exec, dying with it (PR_SET_PDEATHSIG).
bool owner_has_exited(const std::string& who) {
  if (who.rfind(kOwnerPrefix, 0) != 0) return false;  // array tasks: the line names only one
  const std::string rest = who.substr(std::strlen(kOwnerPrefix));
  const auto on_host = rest.find(" on host ");
  if (on_host == std::string::npos) return false;
  const std::string host = rest.substr(on_host + 9, rest.size() - on_host - 10);  // drop ')'
  if (host != this_host()) return false;  // another node's pid means nothing here
  const pid_t pid = static_cast<pid_t>(std::atol(rest.substr(0, on_host).c_str()));
  if (pid <= 0) return false;
  if (::kill(pid, 0) != 0) return errno == ESRCH;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto paren = line.rfind(')');
  return paren != std::string::npos && line.size() > paren + 2 && line[paren + 2] == 'Z';
}

// A sweep killed a moment ago may leave a child it had just forked holding the lock until the
// kernel has finished killing it; that takes milliseconds, seconds on a loaded machine. Waits
// for it (up to 10 s) rather than refuse the rerun a user starts right after the kill.
bool lock_after_owner_exit(int fd, int op) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (::flock(fd, op) == 0) return true;
    if (errno != EWOULDBLOCK) return false;
  }
  return false;
}

[[noreturn]] void refuse(const std::filesystem::path& lock_file, const std::string& who) {
  const std::string dir = lock_file.parent_path().string();
  if (owner_has_exited(who)) {
    throw ConfigError(
        "sweep directory " + dir + " is still locked by processes that " + who +
            " left running after it exited",
        "list them with `fuser -v " + lock_file.string() + "`, stop them, then run again");
  }
  throw ConfigError("sweep directory " + dir + " is in use by " +
                        (who.empty() ? std::string("another lbt sweep") : who),
                    "wait for that sweep to end (or stop it), or choose another --out; the "
                    "lock is released when its process exits");
}

}  // namespace

DirLock::DirLock(const std::filesystem::path& lock_file, Mode mode) {
  // O_CLOEXEC: trials and plot scripts started by this process must not inherit the lock, or
  // a trial orphaned for a moment would keep the directory locked after the sweep died.
  fd_ = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw Error("cannot open " + lock_file.string() + ": " + std::strerror(errno),
                "check that the sweep directory is writable");
  }
  const int op = (mode == Mode::kExclusive ? LOCK_EX : LOCK_SH) | LOCK_NB;
  if (::flock(fd_, op) != 0) {
    int err = errno;
    if (err == EWOULDBLOCK && owner_has_exited(read_owner(fd_))) {
      err = lock_after_owner_exit(fd_, op) ? 0 : errno;
    }
    if (err != 0) {
      const std::string who = read_owner(fd_);
      ::close(fd_);
      fd_ = -1;
      if (err != EWOULDBLOCK) {
        throw Error("cannot lock " + lock_file.string() + ": " + std::strerror(err),
                    "the file system may not support flock; use a local directory for --out");
      }
      refuse(lock_file, who);
    }
  }
  const std::string who =
      std::string(mode == Mode::kExclusive ? kOwnerPrefix : "lbt sweep array tasks (last: pid ") +
      std::to_string(::getpid()) + " on host " + this_host() + ")\n";
  if (::ftruncate(fd_, 0) == 0) {
    [[maybe_unused]] const ssize_t w = ::pwrite(fd_, who.data(), who.size(), 0);
  }
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
