// A program's (--exec) noise.jsonl read into a trial's B_simple: the ratio of its means with
// Fieller's interval, resolved by the rule lbt's own estimates follow (noise::set_ratio).
#include <boost/test/unit_test.hpp>

#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "experiments/sweep/exec_trial.hpp"
#include "experiments/sweep/trial_noise.hpp"
#include "support/process_scratch.hpp"

using namespace lbt::experiments;
namespace fs = std::filesystem;

namespace {

fs::path scratch(const std::string& name) {
  static const lbt::test::ProcessScratch dir(lbt::test::per_process("lbt_exec_noise"));
  fs::path p = dir.path() / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

}  // namespace

// A program's (--exec) B_simple is a ratio of means over its raw squared norms: equal samples
// have no spread, so Fieller's interval is the point T / G itself; with spread the interval
// holds the estimate and stays >= 0. One sample gives no interval.
BOOST_AUTO_TEST_CASE(a_programs_b_simple_has_the_fieller_interval_of_its_means) {
  const fs::path dir = scratch("exec_noise");
  // b_small 1, b_big 2: |G|^2 = 2 |g_big|^2 - |g_small|^2, tr(Sigma) = 2 (|g_small|^2 - |g_big|^2)
  const auto line = [](int step, double g_small_sq, double g_big_sq) {
    return "{\"step\":" + std::to_string(step) + ",\"g_small_sq\":" + std::to_string(g_small_sq) +
           ",\"g_big_sq\":" + std::to_string(g_big_sq) + ",\"b_small\":1,\"b_big\":2}\n";
  };
  {
    std::ofstream out(dir / "noise.jsonl");
    for (int step = 1; step <= 8; ++step) out << line(step, 5.0, 3.5);  // G 2, T 3
  }
  const TrialNoise same = read_exec_noise(dir, 6);
  BOOST_TEST(same.averaged == 1.5, boost::test_tools::tolerance(1e-12));
  {  // records past a budget of 8 steps (G 1, T 9) are not read
    std::ofstream out(dir / "noise.jsonl", std::ios::app);
    for (int step = 9; step <= 12; ++step) out << line(step, 10.0, 5.5);
  }
  BOOST_TEST(read_exec_noise(dir, 6, 8).averaged == 1.5, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(read_exec_noise(dir, 6).averaged > 2.0);  // all 12 read
  BOOST_TEST(same.averaged_ci95.lo == 1.5, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(same.averaged_ci95.hi == 1.5, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(same.start_ci95.lo == 1.5, boost::test_tools::tolerance(1e-9));
  BOOST_TEST(same.at_target_ci95.hi == 1.5, boost::test_tools::tolerance(1e-9));
  {
    std::ofstream out(dir / "noise.jsonl");
    for (int step = 1; step <= 12; ++step)
      out << line(step, 5.0 + 0.3 * (step % 3), 3.5 + 0.1 * (step % 4));
  }
  const TrialNoise spread = read_exec_noise(dir, -1);
  BOOST_TEST(spread.averaged_ci95.lo >= 0.0);
  BOOST_TEST(spread.averaged_ci95.lo < spread.averaged);
  BOOST_TEST(spread.averaged < spread.averaged_ci95.hi);
  BOOST_TEST(std::isnan(spread.at_target_ci95.lo));  // never reached: no value, no interval
  // One sample has no interval, so no value (as lbt's own first record); nor has a mean |G|^2
  // within noise of 0 (G -1 and 2 alternating, T 6 and 3: 4.5 / 0.5 = 9 was reported): B_simple
  // is then unresolved, its interval's upper end open, as set_ratio gives lbt's trials.
  std::ofstream(dir / "noise.jsonl") << line(1, 5.0, 3.5);
  const TrialNoise one = read_exec_noise(dir, -1);
  BOOST_TEST((std::isnan(one.averaged) && std::isnan(one.averaged_ci95.lo)));
  {
    std::ofstream out(dir / "noise.jsonl");
    for (int step = 1; step <= 8; ++step) out << line(step, 5.0, step % 2 ? 2.0 : 3.5);
  }
  const TrialNoise unresolved = read_exec_noise(dir, -1);
  BOOST_TEST(std::isnan(unresolved.averaged));
  BOOST_TEST(std::isinf(unresolved.averaged_ci95.hi));
  {  // the two norms swapped: tr(Sigma) = 2 (3.5 - 5) < 0, so B_simple >= 0 has no value
    std::ofstream out(dir / "noise.jsonl");
    for (int step = 1; step <= 8; ++step) out << line(step, 3.5 + 0.1 * (step % 2), 5.0);
  }
  const TrialNoise swapped = read_exec_noise(dir, 6);
  BOOST_TEST(swapped.records == 8);
  for (double v : {swapped.start, swapped.averaged, swapped.at_target, swapped.averaged_ci95.lo,
                   swapped.averaged_ci95.hi})
    BOOST_TEST(std::isnan(v));
  // A noise.jsonl that is a FIFO reads as no measurement (a reader would block on it for good).
  fs::remove(dir / "noise.jsonl");
  BOOST_REQUIRE(mkfifo((dir / "noise.jsonl").c_str(), 0600) == 0);
  BOOST_TEST(read_exec_noise(dir, 6).records == 0);
  BOOST_TEST(read_trial_noise(dir, 6).records == 0);
  BOOST_TEST(std::isnan(read_trial_b_noise(dir)));
}
