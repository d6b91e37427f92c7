// Atomic write and line appends; see io.hpp.
#include "core/io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include "core/error.hpp"

namespace lbt::io {

std::string write_failure_hint(int err) {
  switch (err) {
    case ENOSPC:
      return "free disk space where it is written (df -h)";
    case EDQUOT:
      return "your disk quota is full: free space under it (quota -s)";
    case EFBIG:
      return "the file passed this process's file size limit: raise it (ulimit -f unlimited)";
    case EACCES:
    case EPERM:
    case EROFS:
      return "check the directory's permissions, or whether its file system is read-only";
    default:
      return "check free disk space and permissions";
  }
}

std::string file_error_hint(int err, const std::string& otherwise) {
  switch (err) {
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
    case EACCES:
    case EPERM:
    case EROFS:
      return write_failure_hint(err);
    default:
      return otherwise;
  }
}

namespace {

void write_all(int fd, std::string_view data, const std::filesystem::path& path) {
  const char* p = data.data();
  std::size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      throw Error("cannot write " + path.string() + ": " + std::strerror(err),
                  write_failure_hint(err));
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
}

}  // namespace

void refuse_symbolic_link(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_symlink(path, ec)) return;
  throw ConfigError(path.string() +
                        " is a symbolic link: lbt writes its own file there and "
                        "will not write through a link onto another file",
                    "remove the link (or replace it with a copy of what it points to), or use "
                    "a new directory");
}

namespace {

// A file where the path needs a directory is the path's fault, as other bad --out values are
// (exit 2); it exited 1 with a hint about permissions. `attempt`: "cannot write PATH".
[[noreturn]] void file_in_the_way(const std::string& attempt) {
  throw ConfigError(attempt + ": " + std::strerror(ENOTDIR) + " (a file is in its way)",
                    "choose another path, or move the file away");
}

}  // namespace

int open_own_file(const std::filesystem::path& path, int flags) {
  const int fd = ::open(path.c_str(), flags | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0 && errno == ELOOP) refuse_symbolic_link(path);
  return fd;
}

std::filesystem::path temporary_twin(const std::filesystem::path& path) {
  char host[256] = "";
  if (::gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, ".%ld.%08x", static_cast<long>(::getpid()),
                static_cast<unsigned>(std::random_device{}()));
  auto tmp = path;
  tmp += std::string(".tmp.") + host + suffix;
  return tmp;
}

void atomic_write(const std::filesystem::path& path, std::string_view contents) {
  const auto tmp = temporary_twin(path);
  int fd = open_own_file(tmp, O_WRONLY | O_CREAT | O_TRUNC);
  if (fd < 0) {
    // Named as the user named it: the temporary file beside it is ours.
    const int err = errno;
    if (err == ENOTDIR) file_in_the_way("cannot write " + path.string());
    throw Error("cannot write " + path.string() + ": " + std::strerror(err),
                file_error_hint(err, "check that its directory exists and is writable"));
  }
  // Every failure names `path` (the temporary file is gone when it is read) and leaves what was
  // there before. fsync and close report what a network file system or a quota refused late.
  const auto fail = [&](int err) {
    ::unlink(tmp.c_str());
    throw Error("cannot write " + path.string() + ": " + std::strerror(err),
                write_failure_hint(err));
  };
  try {
    write_all(fd, contents, path);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(err);
  }
  if (::close(fd) != 0) fail(errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw Error("cannot replace " + path.string() + ": " + std::strerror(err),
                file_error_hint(err, "move away what is at " + path.string()));
  }
}

namespace {

[[noreturn]] void cannot_create(const std::filesystem::path& path, const std::string& what,
                                int err) {
  throw Error(
      "cannot create " + what + " " + path.string() + ": " + std::strerror(err),
      file_error_hint(err, "check that the parent directory is writable, or choose another path"));
}

}  // namespace

void create_directories(const std::filesystem::path& path, const std::string& what) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec == std::errc::not_a_directory || ec == std::errc::file_exists)
    file_in_the_way("cannot create " + what + " " + path.string());
  if (ec) cannot_create(path, what, ec.value());
}

void check_can_create_directories(const std::filesystem::path& path, const std::string& what) {
  std::filesystem::path at = std::filesystem::absolute(path);
  std::error_code ec;
  while (!std::filesystem::exists(at, ec) && at.has_parent_path() && at != at.parent_path())
    at = at.parent_path();
  if (!std::filesystem::is_directory(at, ec))
    file_in_the_way("cannot create " + what + " " + path.string());
  if (::access(at.c_str(), W_OK | X_OK) != 0) cannot_create(path, what, errno);
}

std::string read_file(const std::filesystem::path& path) {
  // Only a regular file (a symlink to one too): a FIFO or a device (a link to /dev/zero) would
  // block or never end, and a directory reads as empty.
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw DataError(
        "cannot read " + path.string() + ": it is not a regular file (" +
            (std::filesystem::is_directory(status) ? "a directory" : "a FIFO or device") + ")",
        "put the file lbt wrote back in its place");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError("cannot open " + path.string(), "check that the file exists");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::ifstream open_regular_file(const std::filesystem::path& path) {
  std::ifstream in;
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) in.open(path);
  return in;
}

LineAppender::LineAppender(const std::filesystem::path& path) : path_(path) {
  fd_ = open_own_file(path, O_WRONLY | O_CREAT | O_APPEND);
  if (fd_ < 0) {
    const int err = errno;
    throw Error("cannot open " + path.string() + " for appending: " + std::strerror(err),
                file_error_hint(err, "check that the run directory is writable"));
  }
}

LineAppender::LineAppender(LineAppender&& other) noexcept
    : fd_(other.fd_), path_(std::move(other.path_)) {
  other.fd_ = -1;
}

LineAppender& LineAppender::operator=(LineAppender&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.fd_;
    path_ = std::move(other.path_);
    other.fd_ = -1;
  }
  return *this;
}

LineAppender::~LineAppender() {
  if (fd_ >= 0) ::close(fd_);
}

void LineAppender::append(std::string_view line) {
  std::string buf;
  buf.reserve(line.size() + 1);
  buf.append(line);
  buf.push_back('\n');
  // Whole line or nothing: one write(2) of the line; if the disk fills (or a size limit hits)
  // part-way, the part written is cut off again, so readers never meet a torn line.
  struct stat st {};
  const off_t before = ::fstat(fd_, &st) == 0 ? st.st_size : -1;
  ssize_t n;
  do {
    n = ::write(fd_, buf.data(), buf.size());
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(buf.size())) return;
  const int err = n < 0 ? errno : ENOSPC;  // a short write: the next one would fail
  if (n > 0 && before >= 0) {
    [[maybe_unused]] const int rc = ::ftruncate(fd_, before);
  }
  throw Error("cannot append to " + path_.string() + ": " + std::strerror(err) +
                  " (the line was not written)",
              write_failure_hint(err));
}

}  // namespace lbt::io
