// Sweep directory lock; see dir_lock.hpp.
#include "experiments/dir_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "core/error.hpp"

namespace lbt::experiments {

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
    const int err = errno;
    char owner[256] = {};
    const ssize_t n = ::pread(fd_, owner, sizeof owner - 1, 0);
    std::string who = n > 0 ? std::string(owner, static_cast<std::size_t>(n)) : std::string();
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) {
      throw Error("cannot lock " + lock_file.string() + ": " + std::strerror(err),
                  "the file system may not support flock; use a local directory for --out");
    }
    throw ConfigError("sweep directory " + lock_file.parent_path().string() + " is in use by " +
                          (who.empty() ? std::string("another lbt sweep") : who),
                      "wait for that sweep to end (or stop it), or choose another --out; the "
                      "lock is released when its process exits");
  }
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::string who =
      (mode == Mode::kExclusive ? "lbt sweep (pid " : "lbt sweep array tasks (last: pid ") +
      std::to_string(::getpid()) + " on host " + host + ")\n";
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
