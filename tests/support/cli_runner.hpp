// Runs the real `lbt` binary from end-to-end tests: a per-process scratch directory, and
// `run_lbt(args)` returning the exit code with stdout and stderr captured through files, and
// the error line of its stderr.
// Needs LBT_BINARY defined to the binary's path (see tests/e2e/CMakeLists.txt).
#pragma once
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "process_scratch.hpp"

namespace lbt::test {

// Removed when the test process exits (tests/support/process_scratch.hpp).
inline const std::filesystem::path& scratch() {
  static const ProcessScratch dir(per_process("lbt_test"));
  return dir.path();
}

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CliResult {
  int code = -1;
  std::string out, err;
};

// Any shell command line (mpiexec in front, a cd first), its stdout and stderr captured.
inline CliResult run_command(const std::string& command) {
  const auto out = scratch() / "stdout", err = scratch() / "stderr";
  const int status = std::system((command + " >" + out.string() + " 2>" + err.string()).c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(out), slurp(err)};
}

// The lbt program the tests run: $LBT_BINARY, where set, runs another copy (the GPU machine runs
// a bundle built here).
inline std::string lbt_binary() {
  const char* other = std::getenv("LBT_BINARY");
  return other && *other ? other : LBT_BINARY;
}

// `launcher` (mpiexec and its options, with a trailing space) goes in front of the program.
inline CliResult run_lbt(const std::string& args, const std::string& launcher = "") {
  return run_command(launcher + lbt_binary() + " " + args);
}

// The "error: ..." line of stderr (the CLI prints it, then "hint: ..."); empty where none.
inline std::string error_line(const std::string& err) {
  const auto at = err.find("error: ");
  return at == std::string::npos ? std::string() : err.substr(at, err.find('\n', at) - at);
}

inline bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace lbt::test
