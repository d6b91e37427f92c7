// Child processes; see child_process.hpp.
#include "experiments/child_process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/dir_lock.hpp"
#include "trainer/comm/node_ranks.hpp"
#include "trainer/interrupt.hpp"

namespace lbt::experiments {
namespace {

// The live children, for a signal handler to read: fixed slots of lock-free atomics (no
// allocation, no locks). `told` makes each child get a forwarded signal once, whether the
// handler or register_child (a child started just as the signal came) sends it.
struct ChildSlot {
  std::atomic<pid_t> pid{0};
  std::atomic<bool> told{false};
};
constexpr int kMaxChildren = 1024;
ChildSlot g_children[kMaxChildren];
std::atomic<int> g_forwarded{0};  // the signal being forwarded, 0 while none
static_assert(std::atomic<pid_t>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

// Each child leads its own process group (spawn_logged): -pid reaches it and what it started.
void tell(ChildSlot& slot, pid_t pid, int signal) {
  if (pid > 0 && signal != 0 && !slot.told.exchange(true)) ::kill(-pid, signal);
}

void register_child(pid_t pid) {
  // Only this thread registers and unregisters; a handler may run between any two lines.
  for (auto& slot : g_children) {
    if (slot.pid.load() != 0) continue;
    slot.told = false;  // before the pid: the handler skips an empty slot
    slot.pid = pid;
    tell(slot, pid, g_forwarded.load());  // the handler ran before the slot held the pid
    return;
  }
  // More live children than slots (thousands of --jobs): those only miss a forwarded signal.
}

bool is_registered(pid_t pid) {
  for (auto& slot : g_children) {
    if (slot.pid.load() == pid) return true;
  }
  return false;
}

void unregister_child(pid_t pid) {
  for (auto& slot : g_children) {
    if (slot.pid.load() == pid) {
      slot.pid = 0;
      return;
    }
  }
}

}  // namespace

// PATH is searched before fork: execvp is not async-signal-safe.
std::string find_executable(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (std::size_t from = 0; from <= dirs.size();) {
    const auto colon = std::min(dirs.find(':', from), dirs.size());
    const std::string dir = dirs.substr(from, colon - from);
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    from = colon + 1;
  }
  return "";
}

// What the child writes to its log when exec fails (built before fork: no allocation there).
static std::string exec_failure_message(const std::string& program) {
  return "lbt sweep: could not execute " + program + " (not found, or not an executable file)\n";
}

// This process's environment with `extra` ("NAME=value") added, a same-named variable replaced.
static std::vector<std::string> environment_with(const std::vector<std::string>& extra) {
  auto name_of = [](const std::string& entry) { return entry.substr(0, entry.find('=')); };
  std::vector<std::string> all;
  for (char** e = environ; e && *e; ++e) {
    const std::string entry(*e);
    const bool replaced = std::any_of(extra.begin(), extra.end(), [&](const std::string& x) {
      return name_of(x) == name_of(entry);
    });
    if (!replaced) all.push_back(entry);
  }
  all.insert(all.end(), extra.begin(), extra.end());
  return all;
}

// argv or envp for exec: pointers into `words`, then nullptr.
static std::vector<char*> c_strings(std::vector<std::string>& words) {
  std::vector<char*> out;
  for (auto& w : words) out.push_back(w.data());
  out.push_back(nullptr);
  return out;
}

pid_t spawn_logged(const std::filesystem::path& program, const std::vector<std::string>& args,
                   const std::filesystem::path& log_file, const std::vector<std::string>& env,
                   int pass_lock) {
  // Build argv and envp before fork: only async-signal-safe calls are allowed in the child.
  std::vector<std::string> all{program.string()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv = c_strings(all);
  std::vector<std::string> with = env;
  if (pass_lock >= 0)
    with.push_back(std::string(kInheritedLockFd) + "=" + std::to_string(pass_lock));
  std::vector<std::string> env_words = environment_with(with);
  std::vector<char*> envp = c_strings(env_words);
  const std::string log = log_file.string();
  io::refuse_symbolic_link(log_file);  // the child opens it without following one, too
  const std::string found = find_executable(program.string());
  const std::string failure = exec_failure_message(program.string());
  const pid_t parent = getpid();

  // The interrupt signals wait until the child is registered (so a forwarded signal reaches
  // it), and the child drops this process's handlers before it can receive one.
  sigset_t interrupts, before;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  sigprocmask(SIG_BLOCK, &interrupts, &before);
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    sigprocmask(SIG_SETMASK, &before, nullptr);
    throw Error(std::string("fork failed: ") + std::strerror(err), "lower --jobs or free memory");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    setpgid(0, 0);  // out of the terminal's foreground group: the sweep forwards Ctrl-C once
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    sigprocmask(SIG_SETMASK, &before, nullptr);
    trainer::unblock_interrupt_signals();  // lbt's threads keep them blocked (interrupt.hpp)
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || null_fd < 0) _exit(126);
    dup2(null_fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    if (pass_lock >= 0) fcntl(pass_lock, F_SETFD, 0);  // open across exec: this one only
    if (!found.empty()) execve(found.c_str(), argv.data(), envp.data());
    [[maybe_unused]] const ssize_t n = ::write(2, failure.data(), failure.size());
    _exit(127);
  }
  // Also here: whichever of the two runs first, the group exists before anyone signals it.
  setpgid(pid, pid);
  register_child(pid);
  sigprocmask(SIG_SETMASK, &before, nullptr);
  return pid;
}

namespace {

// Reaps `pid`, which has ended (a zombie), after killing what is left of its group.
ChildExit reap(pid_t pid) {
  if (is_registered(pid)) ::kill(-pid, SIGKILL);
  ChildExit e;
  int status = 0;
  rusage usage{};
  pid_t got;
  do {
    got = wait4(pid, &status, 0, &usage);
  } while (got < 0 && errno == EINTR);
  if (got < 0) throw Error(std::string("waitpid failed: ") + std::strerror(errno));
  unregister_child(pid);
  e.pid = pid;
  if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  e.max_rss_bytes = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
  return e;
}

// The pid of a child of `which` (-1: any) that has ended, left unreaped (WNOWAIT); 0 when
// `block` is false and none has.
pid_t ended_child(pid_t which, bool block) {
  siginfo_t info{};
  const idtype_t type = which < 0 ? P_ALL : P_PID;
  const int flags = WEXITED | WNOWAIT | (block ? 0 : WNOHANG);
  int rc;
  do {
    rc = waitid(type, which < 0 ? 0 : static_cast<id_t>(which), &info, flags);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) throw Error(std::string("waitid failed: ") + std::strerror(errno));
  return info.si_pid;
}

}  // namespace

std::string exit_text(const ChildExit& e) {
  return e.signal ? "killed by signal " + std::to_string(e.signal)
                  : "exited with code " + std::to_string(e.exit_code);
}

ChildExit wait_child(pid_t which) {
  return reap(ended_child(which, true));
}

ChildExit wait_any_child() {
  return wait_child(-1);
}

std::optional<ChildExit> wait_any_child_until(std::chrono::steady_clock::time_point deadline) {
  // Polling: a timed wait for any child has no system call; 10 ms is far below a trial's life.
  while (true) {
    if (const pid_t pid = ended_child(-1, false); pid > 0) return reap(pid);
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= std::chrono::steady_clock::duration::zero()) return std::nullopt;
    const auto nap =
        std::min<std::chrono::steady_clock::duration>(left, std::chrono::milliseconds(10));
    timespec ts{
        0, static_cast<long>(std::chrono::duration_cast<std::chrono::nanoseconds>(nap).count())};
    nanosleep(&ts, nullptr);
  }
}

namespace {

// A log line as message text: terminal escapes (colours: ESC [ ... letter) and other control
// bytes dropped, a tab made a space; they have no place in a summary.json field or a CSV cell.
std::string printable(const std::string& line) {
  std::string out;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == 0x1b && i + 1 < line.size() && line[i + 1] == '[') {
      for (i += 2; i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7e); ++i) {
      }
      continue;
    }
    if (c == '\t') out += ' ';
    if (c >= 0x20 && c != 0x7f) out += line[i];
  }
  return out;
}

// A line of only dashes, equals signs or the like: a banner's frame.
bool is_rule(const std::string& line) {
  return line.size() >= 3 && line.find_first_not_of("-=*_#~+") == std::string::npos;
}

}  // namespace

std::string tail_lines(const std::filesystem::path& path, int max_lines) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  const std::streamoff size = in ? static_cast<std::streamoff>(in.tellg()) : 0;
  const std::streamoff from_byte =
      std::max<std::streamoff>(0, size - static_cast<std::streamoff>(kTailWindow));
  std::string window(static_cast<std::size_t>(size - from_byte), '\0');
  in.seekg(from_byte);
  in.read(window.data(), static_cast<std::streamsize>(window.size()));
  window.resize(static_cast<std::size_t>(std::max<std::streamsize>(0, in.gcount())));
  // A window that starts mid-line drops that line's start, unless the window is all one line.
  if (const auto nl = window.find('\n'); from_byte > 0 && nl != std::string::npos)
    window.erase(0, nl + 1);
  std::vector<std::string> lines;
  std::istringstream text(window);
  for (std::string line; std::getline(text, line);) {
    // Progress lines end in '\r' updates; keep the text after the last one.
    if (auto cr = line.find_last_of('\r'); cr != std::string::npos) line = line.substr(cr + 1);
    line = printable(line);
    if (line.size() > kTailLineChars) line = line.substr(0, kTailLineChars) + " ...";
    if (!line.empty()) lines.push_back(line);
  }
  // A log that ends in a launcher's banner (mpirun's "----" framed "There are not enough slots
  // ..."): its first lines say what went wrong, its last ones only how to work around it.
  std::size_t from = 0, to = lines.size();
  if (!lines.empty() && is_rule(lines.back())) {
    const auto opening = std::find_if(lines.rbegin() + 1, lines.rend(), is_rule);
    if (opening != lines.rend()) {
      from = static_cast<std::size_t>(lines.rend() - opening);
      to = std::min(lines.size() - 1, from + static_cast<std::size_t>(max_lines));
    }
  }
  std::string out;
  int taken = 0;
  for (std::size_t i = to; i-- > from && taken < max_lines;) {
    if (is_rule(lines[i])) continue;  // a rule says nothing
    out = lines[i] + (out.empty() ? "" : " | ") + out;
    ++taken;
  }
  return out;
}

std::optional<ErrorLines> lbt_error_lines(const std::filesystem::path& log) {
  std::ifstream in(log);
  ErrorLines lines;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("error: ", 0) == 0) lines.error = line.substr(7);
    if (line.rfind("hint: ", 0) == 0) lines.hint = line.substr(6);
  }
  if (lines.error.empty()) return std::nullopt;
  return lines;
}

void forward_signal_to_children(int signal) {
  g_forwarded = signal;
  for (auto& slot : g_children) tell(slot, slot.pid.load(), signal);
}

void signal_child_groups(int signal) {
  for (auto& slot : g_children) {
    if (const pid_t pid = slot.pid.load(); pid > 0) ::kill(-pid, signal);
  }
}

std::filesystem::path self_executable() {
  return std::filesystem::read_symlink("/proc/self/exe");
}

void exec_with_own_arguments(const std::filesystem::path& program) {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::vector<std::string> args;
  for (std::string arg; std::getline(in, arg, '\0');) args.push_back(arg);
  if (args.empty()) args.emplace_back();
  args.front() = program.string();
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  execv(argv.front(), argv.data());
  throw Error("cannot run " + program.string() + ": " + std::strerror(errno),
              "build it beside lbt (cmake --build build)");
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

int task_cores() {
  if (const auto slurm = comm::int_from_env("SLURM_CPUS_PER_TASK", 1, 1 << 20)) return *slurm;
  return available_cores();
}

std::vector<std::string> mpirun_local_args(int ranks) {
  std::vector<std::string> args{"-np", std::to_string(ranks), "--oversubscribe"};
  if (ranks > available_cores()) args.insert(args.end(), {"--bind-to", "none"});
  if (geteuid() == 0) {  // OpenMPI refuses root without these
    setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
    setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  }
  return args;
}

}  // namespace lbt::experiments
