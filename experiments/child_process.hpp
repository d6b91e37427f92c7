// Child processes for sweep trials: fork + exec with stdout/stderr to a log file. The child
// asks the kernel for SIGKILL when its parent dies (PR_SET_PDEATHSIG), so killing a sweep never
// leaves orphaned trials writing into directories that a rerun is about to clear. Each child
// runs in its own process group, so a terminal's Ctrl-C reaches only the sweep, which forwards
// it once (forward_signal_to_children): a trial seeing the key press twice would exit at once
// instead of saving its state. The group is what the sweep stops: the forwarded signal, a
// trial's time limit, a second signal and a crash of the sweep reach the trial's own children
// too, and whatever a trial leaves running in its group when it exits is killed.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace lbt::experiments {

// Starts `program args...` as the leader of a new process group (its pid is the group's id);
// returns its pid. `program` without a '/' is looked up on PATH. The log is appended to (a
// resumed trial keeps the log of its first part). `env` ("NAME=value" entries) is added to this
// process's environment for the child, replacing a variable of the same name. `pass_lock`, a
// DirLock's descriptor (dir_lock.hpp), is left open in the child and named in its environment,
// so the child's DirLock of that file holds the lock on without a gap. Throws lbt::Error when
// fork fails.
pid_t spawn_logged(const std::filesystem::path& program, const std::vector<std::string>& args,
                   const std::filesystem::path& log_file, const std::vector<std::string>& env = {},
                   int pass_lock = -1);

// `program`'s full path: itself when it holds a '/', else the first executable file of that
// name on PATH; empty when there is none.
std::string find_executable(const std::string& program);

struct ChildExit {
  pid_t pid = -1;
  int exit_code = -1;  // when exited normally
  int signal = 0;      // when killed by a signal
  // The child's peak resident set (wait4's ru_maxrss). It starts from this process's resident
  // set at the fork, so a parent measuring children spawns them while it is small.
  std::int64_t max_rss_bytes = 0;
};

// Blocks until one of this process's children ends. A child started by spawn_logged has its
// process group killed (SIGKILL) before it is reaped: its pid, the group's id, cannot have been
// reused yet, and nothing it started goes on writing into its directory.
ChildExit wait_any_child();
// The same, giving up at `deadline` (nullopt then).
std::optional<ChildExit> wait_any_child_until(std::chrono::steady_clock::time_point deadline);
// Blocks until the child `pid` ends.
ChildExit wait_child(pid_t pid);

// How a child ended, for messages: "killed by signal 9" or "exited with code 3".
std::string exit_text(const ChildExit& exit);

// Sends `signal` once to the process group of every child started by spawn_logged that has not
// ended, and to any started later. Async-signal-safe (lock-free atomics and kill only): a signal
// handler calls it.
void forward_signal_to_children(int signal);

// Sends `signal` to the process group of every child started by spawn_logged that has not been
// reaped. Async-signal-safe: the second-signal and crash handlers call it before they exit.
void signal_child_groups(int signal);

// The last `max_lines` non-empty lines of a text file, joined by " | " (for failure messages).
// Reads the file's last kTailWindow bytes alone and keeps a line's first kTailLineChars
// characters: a program's log may hold gigabytes, or one line of them, and the message is a
// summary.json field and a sweep.csv cell.
inline constexpr std::size_t kTailWindow = 64 * 1024, kTailLineChars = 400;
std::string tail_lines(const std::filesystem::path& path, int max_lines);

// The `error:` and `hint:` lines (their text after the prefix; the last of each) that an lbt
// child's failure wrote to its log (cli/main.cpp), which launchers such as mpirun surround
// with their own lines; nullopt where the log has no error line.
struct ErrorLines {
  std::string error, hint;
};
std::optional<ErrorLines> lbt_error_lines(const std::filesystem::path& log);

// The path of the running executable (/proc/self/exe).
std::filesystem::path self_executable();

// Replaces this process by `program` with this process's own arguments (/proc/self/cmdline), as
// if it had been started so. Returns only by throwing Error (it cannot run `program`).
[[noreturn]] void exec_with_own_arguments(const std::filesystem::path& program);

// Cores this process may run on (its CPU affinity mask: taskset, a cgroup cpuset, mpirun's or
// Slurm's binding).
int available_cores();

// The cores this task was given: SLURM_CPUS_PER_TASK where Slurm set it (a whole number from 1),
// else available_cores().
int task_cores();

// mpirun's arguments for `ranks` processes on this machine (what follows the launcher's name):
// -np N --oversubscribe, and no core binding past available_cores(), which would refuse the
// extra ranks. As root (CI), also sets OpenMPI's two permissions in this process's environment.
std::vector<std::string> mpirun_local_args(int ranks);

}  // namespace lbt::experiments
