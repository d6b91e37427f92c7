// The directory lock (experiments/dir_lock.cpp; sweeps, lbt cbs, runs) between real processes: a
// live owner is named and refused at once; a sweep that was killed while a child it had just forked
// still held the lock (the race test_soak met) is followed, not refused, once that child is gone.
#include <boost/test/unit_test.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "experiments/dir_lock.hpp"
#include "experiments/sweep/sweep_interrupt.hpp"
#include "support/process_scratch.hpp"

namespace fs = std::filesystem;
using lbt::experiments::DirLock;

namespace {

fs::path fresh_dir(const std::string& name) {
  static const lbt::test::ProcessScratch scratch(lbt::test::per_process("lbt_dir_lock"));
  const fs::path dir = scratch.path() / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Forks a process that takes the lock, writes one byte to `ready` and then runs `after`.
template <class After>
pid_t owner(const fs::path& lock_file, int ready, After after) {
  const pid_t pid = fork();
  if (pid == 0) {
    DirLock lock(lock_file, DirLock::Mode::kExclusive);
    after(ready);
    _exit(0);
  }
  return pid;
}

void wait_ready(int fd) {
  char c;
  BOOST_REQUIRE_EQUAL(read(fd, &c, 1), 1);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

BOOST_AUTO_TEST_SUITE(dir_lock)

BOOST_AUTO_TEST_CASE(a_live_owner_is_named_and_refused_at_once) {
  const fs::path lock_file = fresh_dir("live") / "sweep.lock";
  int ready[2], release[2];
  BOOST_REQUIRE(pipe(ready) == 0 && pipe(release) == 0);
  const pid_t pid = owner(lock_file, ready[1], [&](int fd) {
    [[maybe_unused]] auto w = write(fd, "x", 1);
    char c;
    [[maybe_unused]] auto r = read(release[0], &c, 1);  // holds the lock until told
  });
  wait_ready(ready[0]);
  const auto t0 = std::chrono::steady_clock::now();
  std::string message;
  try {
    DirLock second(lock_file, DirLock::Mode::kExclusive);
  } catch (const lbt::ConfigError& e) {
    message = e.what();
  }
  BOOST_TEST(seconds_since(t0) < 1.0);
  BOOST_TEST(message.find("in use by lbt sweep (pid " + std::to_string(pid)) != std::string::npos,
             message);
  // A SLURM array task has no --out to choose: its hint says what to do instead (2026-11-29).
  ::setenv("SLURM_ARRAY_TASK_ID", "3", 1);
  std::string hint;
  try {
    DirLock second(lock_file, DirLock::Mode::kExclusive);
  } catch (const lbt::ConfigError& e) {
    hint = e.hint();
  }
  ::unsetenv("SLURM_ARRAY_TASK_ID");
  BOOST_TEST(hint.find("--launcher slurm` submits what is left") != std::string::npos, hint);
  BOOST_TEST(hint.find("--out") == std::string::npos, hint);
  [[maybe_unused]] auto w = write(release[1], "x", 1);
  waitpid(pid, nullptr, 0);
  DirLock after_owner(lock_file, DirLock::Mode::kExclusive);  // released when it exited
}

// --check's read-only look (DirLock::check): a live owner is refused with the constructor's
// line; a free lock file, or none, passes and is left exactly as it was (no file created).
BOOST_AUTO_TEST_CASE(the_read_only_check_refuses_a_live_owner_and_writes_nothing) {
  const fs::path dir = fresh_dir("check");
  BOOST_CHECK_NO_THROW(DirLock::check(dir / "run.lock", "lbt train"));
  BOOST_TEST(!fs::exists(dir / "run.lock"));
  int ready[2], release[2];
  BOOST_REQUIRE(pipe(ready) == 0 && pipe(release) == 0);
  const pid_t pid = owner(dir / "run.lock", ready[1], [&](int fd) {
    [[maybe_unused]] auto w = write(fd, "x", 1);
    char c;
    [[maybe_unused]] auto r = read(release[0], &c, 1);
  });
  wait_ready(ready[0]);
  const auto written_at = fs::last_write_time(dir / "run.lock");
  std::string message;
  try {
    DirLock::check(dir / "run.lock", "lbt train");
  } catch (const lbt::ConfigError& e) {
    message = e.what();
  }
  BOOST_TEST(message.find("run directory " + dir.string() + " is in use by lbt sweep (pid " +
                          std::to_string(pid)) != std::string::npos,
             message);
  [[maybe_unused]] auto w = write(release[1], "x", 1);
  waitpid(pid, nullptr, 0);
  BOOST_CHECK_NO_THROW(DirLock::check(dir / "run.lock", "lbt train"));
  BOOST_TEST((fs::last_write_time(dir / "run.lock") == written_at));
}

BOOST_AUTO_TEST_CASE(a_dead_owners_lingering_child_delays_the_next_sweep_but_does_not_refuse_it) {
  const fs::path lock_file = fresh_dir("lingering") / "sweep.lock";
  int ready[2];
  BOOST_REQUIRE(pipe(ready) == 0);
  // The owner forks a child that inherits the locked descriptor (as a trial does between fork
  // and exec) and lives on for 0.5 s after the owner has exited.
  const pid_t pid = owner(lock_file, ready[1], [](int fd) {
    if (fork() == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      _exit(0);
    }
    [[maybe_unused]] auto w = write(fd, "x", 1);
  });
  wait_ready(ready[0]);
  waitpid(pid, nullptr, 0);
  const auto t0 = std::chrono::steady_clock::now();
  BOOST_CHECK_NO_THROW(DirLock(lock_file, DirLock::Mode::kExclusive));
  BOOST_TEST(seconds_since(t0) < 10.0);
}

// pid_max is often 32768: the dead owner's pid may belong to another process by now. The start
// time written beside the pid tells them apart. Here the lock file names this test's own pid
// with another start time, and the holder lingers for 0.5 s.
BOOST_AUTO_TEST_CASE(an_owner_whose_pid_was_reused_counts_as_exited) {
  const fs::path lock_file = fresh_dir("reused") / "sweep.lock";
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  int ready[2];
  BOOST_REQUIRE(pipe(ready) == 0);
  const pid_t holder = fork();
  if (holder == 0) {
    const int fd = open(lock_file.c_str(), O_RDWR | O_CREAT, 0644);
    if (fd < 0 || flock(fd, LOCK_EX) != 0) _exit(1);
    const std::string owner =
        "lbt sweep (pid " + std::to_string(getppid()) + " on host " + host + ")\nstarted 1\n";
    [[maybe_unused]] auto w = write(fd, owner.data(), owner.size());
    w = write(ready[1], "x", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    _exit(0);
  }
  wait_ready(ready[0]);
  const auto t0 = std::chrono::steady_clock::now();
  BOOST_CHECK_NO_THROW(DirLock(lock_file, DirLock::Mode::kExclusive));
  BOOST_TEST(seconds_since(t0) > 0.3);  // it waited for the holder
  waitpid(holder, nullptr, 0);
}

// A sweep's trial (or lbt cbs's branch) directory that another process took after the sweep
// looked at it (a resume of the trial by hand): prepare_trial_dir takes the trial's run.lock
// before it reads or clears anything, so it refuses naming the holder and removes nothing. Before,
// it removed the directory under the live run.
BOOST_AUTO_TEST_CASE(a_trial_directory_another_process_holds_is_not_cleared) {
  const fs::path dir = fresh_dir("trial");
  { std::ofstream(dir / "metrics.jsonl") << "{\"step\": 1}\n"; }
  int ready[2], release[2];
  BOOST_REQUIRE(pipe(ready) == 0 && pipe(release) == 0);
  const pid_t pid = fork();
  if (pid == 0) {
    DirLock lock(dir / "run.lock", DirLock::Mode::kExclusive, "lbt train");
    [[maybe_unused]] auto w = write(ready[1], "x", 1);
    char c;
    [[maybe_unused]] auto r = read(release[0], &c, 1);
    _exit(0);
  }
  wait_ready(ready[0]);
  std::string message;
  try {
    lbt::experiments::prepare_trial_dir(dir, 1);
  } catch (const lbt::ConfigError& e) {
    message = e.what();
  }
  BOOST_TEST(message.find("in use by lbt train (pid " + std::to_string(pid)) != std::string::npos,
             message);
  BOOST_TEST(fs::exists(dir / "metrics.jsonl"));
  [[maybe_unused]] auto w = write(release[1], "x", 1);
  waitpid(pid, nullptr, 0);
  BOOST_TEST(!lbt::experiments::prepare_trial_dir(dir, 1).resume);  // free now: emptied, clean
  BOOST_TEST(!fs::exists(dir / "metrics.jsonl"));
  BOOST_TEST(fs::exists(dir / "run.lock"));
}

// A run.lock that links elsewhere (a run directory from an archive or a colleague): the lock's
// owner line would have overwritten the linked file; now the lock is refused naming the link, and
// the file keeps its bytes.
BOOST_AUTO_TEST_CASE(a_lock_file_that_is_a_symbolic_link_is_refused_and_its_target_kept) {
  const fs::path dir = fresh_dir("link");
  const fs::path victim = dir / "victim.txt";
  { std::ofstream(victim) << "precious\n"; }
  fs::create_symlink(victim, dir / "run.lock");
  BOOST_CHECK_THROW(DirLock(dir / "run.lock", DirLock::Mode::kExclusive), lbt::ConfigError);
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  BOOST_TEST(text == "precious\n");
}

// A lock passed down (kInheritedLockFd, as lbt sweep passes a trial's run.lock to its lbt
// train): the child's DirLock of the same file takes the inherited descriptor over, names the
// child as owner, and the lock outlives the parent's copy with no moment free; a descriptor of
// another file is not taken (the child is refused like anyone else), and the variable is gone.
BOOST_AUTO_TEST_CASE(a_lock_passed_to_a_child_is_held_on_without_a_gap) {
  const fs::path dir = fresh_dir("passed");
  auto parent = std::make_unique<DirLock>(dir / "run.lock", DirLock::Mode::kExclusive);
  const int other = ::open((dir / "other").c_str(), O_RDWR | O_CREAT, 0644);
  BOOST_REQUIRE(other >= 3);
  int ready[2], release[2];
  BOOST_REQUIRE(pipe(ready) == 0 && pipe(release) == 0);
  const pid_t child = fork();
  if (child == 0) {
    // Another file's descriptor: not taken, so the parent's lock refuses this child.
    setenv(lbt::experiments::kInheritedLockFd, std::to_string(other).c_str(), 1);
    bool refused = false;
    try {
      DirLock wrong(dir / "run.lock", DirLock::Mode::kExclusive, "lbt train");
    } catch (const lbt::ConfigError&) {
      refused = true;
    }
    setenv(lbt::experiments::kInheritedLockFd, std::to_string(parent->descriptor()).c_str(), 1);
    DirLock taken(dir / "run.lock", DirLock::Mode::kExclusive, "lbt train");
    const bool gone = std::getenv(lbt::experiments::kInheritedLockFd) == nullptr;
    [[maybe_unused]] auto w = write(ready[1], refused && gone ? "y" : "n", 1);
    char c;
    [[maybe_unused]] auto r = read(release[0], &c, 1);
    _exit(0);
  }
  char verdict = 0;
  BOOST_REQUIRE_EQUAL(read(ready[0], &verdict, 1), 1);
  BOOST_TEST(verdict == 'y', "the other file's descriptor was taken, or the variable kept");
  parent.reset();  // the parent's copy closed: the child's holds the lock on
  std::string message;
  try {
    DirLock third(dir / "run.lock", DirLock::Mode::kExclusive, "lbt sweep");
  } catch (const lbt::ConfigError& e) {
    message = e.what();
  }
  BOOST_TEST(message.find("in use by lbt train (pid " + std::to_string(child)) != std::string::npos,
             message);
  [[maybe_unused]] auto w = write(release[1], "x", 1);
  waitpid(child, nullptr, 0);
  BOOST_CHECK_NO_THROW(DirLock(dir / "run.lock", DirLock::Mode::kExclusive));  // its end freed it
  ::close(other);
}

BOOST_AUTO_TEST_SUITE_END()
