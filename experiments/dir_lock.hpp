// Ownership of a sweep's (or lbt cbs's, or a run's) directory: an advisory lock (flock(2)) on
// DIR/sweep.lock (DIR/cbs.lock, DIR/run.lock), which holds the owner's command, host and pid for
// the message a second one prints. The kernel releases the lock when the owner's process ends,
// however it ends (kill -9 included), so a stale lock cannot outlive it; the file itself is left in
// place and means nothing without the lock.
#pragma once
#include <filesystem>

namespace lbt::experiments {

// The environment variable naming a lock descriptor a parent passed down (spawn_logged).
inline constexpr const char* kInheritedLockFd = "LBT_INHERITED_LOCK_FD";

class DirLock {
 public:
  enum class Mode {
    kExclusive,  // one whole sweep (or --collect) owns the directory
    kShared,     // a SLURM array task: many run side by side, none beside an exclusive owner
  };
  DirLock() = default;
  // Takes the lock without waiting; throws ConfigError (exit 2) naming the owner when another
  // process holds it. `command` names this process's command in the owner line a refused
  // process prints ("lbt sweep (pid 12 on host h)", "lbt cbs (pid ...)").
  DirLock(const std::filesystem::path& lock_file, Mode mode, const char* command = "lbt sweep");
  DirLock(DirLock&& other) noexcept;
  DirLock& operator=(DirLock&& other) noexcept;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;
  ~DirLock();
  bool held() const { return fd_ >= 0; }
  // The descriptor to pass to a child that goes on holding this lock (spawn_logged's
  // `pass_lock`): the child's DirLock of the same file takes it over (kInheritedLockFd), so no
  // other process can take the directory between the two. -1 when not held.
  int descriptor() const { return fd_; }
  // What the constructor would refuse (another live process holding `lock_file`), found
  // without creating or writing the file (--check). Where `lock_file` does not exist, nothing.
  static void check(const std::filesystem::path& lock_file, const char* command);

 private:
  int fd_ = -1;
};

}  // namespace lbt::experiments
