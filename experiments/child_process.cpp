// Child processes; see child_process.hpp.
#include "experiments/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/error.hpp"

namespace lbt::experiments {

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

  const pid_t pid = fork();
  if (pid < 0) {
    throw Error(std::string("fork failed: ") + std::strerror(errno), "lower --jobs or free memory");
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);  // the parent died before prctl took effect
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || null_fd < 0) _exit(126);
    dup2(null_fd, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

ChildExit wait_any_child() {
  ChildExit e;
  int status = 0;
  pid_t pid;
  do {
    pid = waitpid(-1, &status, 0);
  } while (pid < 0 && errno == EINTR);
  if (pid < 0) throw Error(std::string("waitpid failed: ") + std::strerror(errno));
  e.pid = pid;
  if (WIFEXITED(status)) e.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  return e;
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
  const std::size_t from = lines.size() > static_cast<std::size_t>(max_lines) ? lines.size() - max_lines : 0;
  for (std::size_t i = from; i < lines.size(); ++i) out += (out.empty() ? "" : " | ") + lines[i];
  return out;
}

std::filesystem::path self_executable() { return std::filesystem::read_symlink("/proc/self/exe"); }

}  // namespace lbt::experiments
