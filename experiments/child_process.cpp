// Child processes; see child_process.hpp.
#include "experiments/child_process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"

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

void tell(ChildSlot& slot, pid_t pid, int signal) {
  if (pid > 0 && signal != 0 && !slot.told.exchange(true)) ::kill(pid, signal);
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

void unregister_child(pid_t pid) {
  for (auto& slot : g_children) {
    if (slot.pid.load() == pid) {
      slot.pid = 0;
      return;
    }
  }
}

}  // namespace

pid_t spawn_logged(const std::filesystem::path& program, const std::vector<std::string>& args,
                   const std::filesystem::path& log_file) {
  // Build argv before fork: only async-signal-safe calls are allowed in the child.
  std::vector<std::string> all{program.string()};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = log_file.string();
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
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || null_fd < 0) _exit(126);
    dup2(null_fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  register_child(pid);
  sigprocmask(SIG_SETMASK, &before, nullptr);
  return pid;
}

ChildExit wait_child(pid_t which) {
  ChildExit e;
  int status = 0;
  rusage usage{};
  pid_t pid;
  do {
    pid = wait4(which, &status, 0, &usage);
  } while (pid < 0 && errno == EINTR);
  if (pid < 0) throw Error(std::string("waitpid failed: ") + std::strerror(errno));
  unregister_child(pid);
  e.pid = pid;
  if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  e.max_rss_bytes = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // KiB on Linux
  return e;
}

ChildExit wait_any_child() {
  return wait_child(-1);
}

std::string tail_lines(const std::filesystem::path& path, int max_lines) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    // Progress lines end in '\r' updates; keep the text after the last one.
    if (auto cr = line.find_last_of('\r'); cr != std::string::npos) line = line.substr(cr + 1);
    if (!line.empty()) lines.push_back(line);
  }
  std::string out;
  const std::size_t from =
      lines.size() > static_cast<std::size_t>(max_lines) ? lines.size() - max_lines : 0;
  for (std::size_t i = from; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

void forward_signal_to_children(int signal) {
  g_forwarded = signal;
  for (auto& slot : g_children) tell(slot, slot.pid.load(), signal);
}

std::filesystem::path self_executable() {
  return std::filesystem::read_symlink("/proc/self/exe");
}

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
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
