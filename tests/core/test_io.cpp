// core/io's temporary twins: unique beyond one machine's process IDs.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "core/io.hpp"

BOOST_AUTO_TEST_SUITE(io_twins)

// A SLURM array's tasks on several nodes rewrite one sweep.csv, and PIDs repeat across nodes:
// two tasks named the same PATH.tmp.PID ("cannot replace sweep.csv", a task FAILED after its
// trial reached the target: 2026-11-29 audit). The twin names the host and a random part too.
BOOST_AUTO_TEST_CASE(a_temporary_twin_names_the_host_and_differs_within_one_process) {
  const std::filesystem::path file = "/sweep/sweep.csv";
  char host[256] = "";
  BOOST_REQUIRE(::gethostname(host, sizeof host - 1) == 0);
  const std::string prefix =
      "/sweep/sweep.csv.tmp." + std::string(host) + "." + std::to_string(::getpid()) + ".";
  std::set<std::string> names;
  for (int i = 0; i < 100; ++i) {
    const std::string twin = lbt::io::temporary_twin(file).string();
    BOOST_TEST(twin.rfind(prefix, 0) == 0u, twin);
    BOOST_TEST(twin.size() == prefix.size() + 8, twin);  // 8 hex digits
    names.insert(twin);
  }
  BOOST_TEST(names.size() >= 99u);  // 32 random bits: a repeat in 100 draws is ~1e-6
}

BOOST_AUTO_TEST_SUITE_END()
