// Helpers for training runs under mpirun in tests: the world communicator, a scratch directory
// every rank names alike, and the check that a run is refused with a ConfigError.
#pragma once
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <string>

#include "core/config.hpp"
#include "core/error.hpp"
#include "small_mpi_run.hpp"

namespace lbt::test {

// TMP/PREFIX-PID/NAME with rank 0's pid, so rank 0's run files can be read back by every rank.
// The broadcast runs once, in the first call, which every rank must reach.
inline std::filesystem::path shared_scratch(const std::string& prefix, const std::string& name) {
  static const std::filesystem::path base = [&] {
    long long pid = getpid();
    world().broadcast(std::as_writable_bytes(std::span(&pid, 1)), 0);
    return std::filesystem::temp_directory_path() / (prefix + "-" + std::to_string(pid));
  }();
  return base / name;
}

// Checks that run() throws a ConfigError whose message contains `says`; `label` names the case.
template <class Run>
void expect_config_error(Run&& run, const std::string& says, const std::string& label) {
  try {
    run();
    BOOST_ERROR(label << ": no ConfigError");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find(says) != std::string::npos, e.what());
  }
}

}  // namespace lbt::test
