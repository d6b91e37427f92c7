// A test process's own scratch directory, TMP/NAME, emptied when first made and removed when the
// process exits normally. Test processes write whole run directories there (an e2e suite's runs
// reach 250 MB); kept, they filled the disk of a machine that runs the suites again and again, and
// a CI build then failed to link. LBT_KEEP_TEST_SCRATCH=1 keeps it for a look after a failure.
#pragma once
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace lbt::test {

class ProcessScratch {
 public:
  explicit ProcessScratch(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / name), owner_(::getpid()) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  // A forked child that returns through exit() must not take its parent's files with it.
  ~ProcessScratch() {
    const char* keep = std::getenv("LBT_KEEP_TEST_SCRATCH");
    if (::getpid() != owner_ || (keep && *keep && std::string(keep) != "0")) return;
    std::error_code ignored;  // nothing to report to at exit
    std::filesystem::remove_all(dir_, ignored);
  }
  ProcessScratch(const ProcessScratch&) = delete;
  ProcessScratch& operator=(const ProcessScratch&) = delete;

  const std::filesystem::path& path() const { return dir_; }

 private:
  std::filesystem::path dir_;
  pid_t owner_;
};

// PREFIX_PID: one directory per test process, so suites run side by side do not meet.
inline std::string per_process(const std::string& prefix) {
  return prefix + "_" + std::to_string(::getpid());
}

}  // namespace lbt::test
