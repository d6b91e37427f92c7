// File helpers: atomic whole-file writes (temp + fsync + rename) so a reader never sees a
// half-written file, and line appends that leave JSONL files parseable after a kill.
#pragma once
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace lbt::io {

// The temporary twin an atomic write fills before its rename: PATH.tmp.HOST.PID.RANDOM. The PID
// alone is unique on one machine only, and a SLURM array's tasks on several nodes rewrite one
// sweep.csv: two shared a temporary file ("cannot replace sweep.csv": 2026-11-29 audit).
std::filesystem::path temporary_twin(const std::filesystem::path& path);

// Writes `contents` to `path` atomically: a temp file beside it, fsync, rename over `path`.
void atomic_write(const std::filesystem::path& path, std::string_view contents);

// create_directories(path), or an Error "cannot create WHAT PATH: REASON" with a hint (a
// ConfigError where a file stands at the path or on it). `what`
// names it for the user: "run directory", "sweep directory".
void create_directories(const std::filesystem::path& path, const std::string& what);

// What create_directories(path, what) would refuse, found without writing anything (--check):
// the nearest existing ancestor of `path` (path itself if it exists) must be a directory this
// process may write into and enter (access(2), so a root process passes wherever permission
// bits are all that stop it). The same Error.
void check_can_create_directories(const std::filesystem::path& path, const std::string& what);

// open(2) of a file lbt writes in its own directories (flags: O_WRONLY or O_RDWR, O_CREAT ...),
// never through a symbolic link there: a directory from elsewhere (a colleague's run, an
// unpacked archive) whose metrics.jsonl or run.lock links to ~/.bashrc would otherwise have
// lbt's lines written onto that file. A link throws ConfigError naming it (exit 2); other
// failures return -1 with errno set, as open(2).
int open_own_file(const std::filesystem::path& path, int flags);

// Throws open_own_file's ConfigError where `path` is a symbolic link (for a file a child
// process opens: the refusal must come from the parent, before the fork).
void refuse_symbolic_link(const std::filesystem::path& path);

// The hint for a write(2) that failed with `err`: ENOSPC the disk, EDQUOT the quota, EFBIG the
// process's file size limit (ulimit -f), EACCES/EPERM/EROFS the permissions.
std::string write_failure_hint(int err);
// The same for an open, mkdir, rename or fsync that failed with `err` where the disk, quota,
// size limit or permissions explain it (out of inodes is ENOSPC too); `otherwise` for the rest.
std::string file_error_hint(int err, const std::string& otherwise);

// Reads a whole file; throws DataError naming the path when it cannot be read.
std::string read_file(const std::filesystem::path& path);

// `path` opened for reading where it is a regular file (or a link to one); otherwise a closed
// stream, which reads as empty. For logs a reader skips when absent: a FIFO planted under the
// name would block the reader for good.
std::ifstream open_regular_file(const std::filesystem::path& path);

// Appends lines to a file opened once; each append is one write(2) of a whole line, so a
// killed process leaves at most a missing line, never a torn one in the middle of the file. A
// write cut short (disk full, file size limit) is truncated back and throws: whole lines or
// nothing. (One writer per file: the run's rank 0.)
class LineAppender {
 public:
  LineAppender() = default;
  explicit LineAppender(const std::filesystem::path& path);
  LineAppender(LineAppender&& other) noexcept;
  LineAppender& operator=(LineAppender&& other) noexcept;
  LineAppender(const LineAppender&) = delete;
  LineAppender& operator=(const LineAppender&) = delete;
  ~LineAppender();

  void append(std::string_view line);  // adds '\n'
  bool is_open() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
  std::filesystem::path path_;
};

}  // namespace lbt::io
