// Ownership of a sweep directory: an advisory lock (flock(2)) on DIR/sweep.lock, which holds the
// owner's host and pid for the message a second sweep prints. The kernel releases the lock when
// the owner's process ends, however it ends (kill -9 included), so a stale lock cannot outlive
// it; the file itself is left in place and means nothing without the lock.
#pragma once
#include <filesystem>

namespace lbt::experiments {

class DirLock {
 public:
  enum class Mode {
    kExclusive,  // one whole sweep (or --collect) owns the directory
    kShared,     // a SLURM array task: many run side by side, none beside an exclusive owner
  };
  DirLock() = default;
  // Takes the lock without waiting; throws ConfigError (exit 2) naming the owner when another
  // process holds it.
  DirLock(const std::filesystem::path& lock_file, Mode mode);
  DirLock(DirLock&& other) noexcept;
  DirLock& operator=(DirLock&& other) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock();

 private:
  int fd_ = -1;
};

}  // namespace lbt::experiments
