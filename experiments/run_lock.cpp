// One writer per run directory; see run_lock.hpp.
#include "experiments/run_lock.hpp"

#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/output_kind.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;

DirLock lock_run_directory(const fs::path& dir, const char* command) {
  return DirLock(dir / "run.lock", DirLock::Mode::kExclusive, command);
}

void refuse_linked_checkpoints(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_symlink(dir / "checkpoints", ec)) return;
  throw ConfigError((dir / "checkpoints").string() +
                        " is a symbolic link: lbt prunes and resumes from the checkpoints it "
                        "finds there, so a directory another run's link shares would mix the "
                        "two runs",
                    "replace the link with the directory it points to (mv it here), or put the "
                    "whole run on that disk (--out there)");
}

std::unique_ptr<trainer::RunDirectory> open_new_run_directory(const fs::path& dir, bool overwrite,
                                                              DirLock& lock, const char* command) {
  refuse_other_output(dir, OutputKind::kRun, "this run");
  // A run found there is refused (without --overwrite) before the directory is touched; one
  // that is still training keeps it, --overwrite or not.
  trainer::RunDirectory::check(dir, overwrite);
  if (!fs::exists(dir)) io::create_directories(dir, "run directory");
  if (!lock.held()) lock = lock_run_directory(dir, command);
  auto run_dir = std::make_unique<trainer::RunDirectory>(dir, overwrite);
  // --overwrite moved the old directory (and its run.lock) aside: lock the new one.
  if (!fs::exists(dir / "run.lock")) lock = lock_run_directory(dir, command);
  return run_dir;
}

}  // namespace lbt::experiments
