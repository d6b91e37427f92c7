// Shared by the careless-input suites (test_careless_input.cpp, test_damaged_sweep_files.cpp):
// a real sweep made once per process, copies of it to damage, and how a refusal must read.
#pragma once
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include "support/cli_runner.hpp"

namespace lbt::test {

using Result = CliResult;

// A real sweep (8 trials of a few hundred steps on synthetic regression, about a second),
// made once; tests damage copies of it.
inline const std::filesystem::path& real_sweep() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path cfg = scratch() / "sweep.toml";
    std::ofstream(cfg) << "[model]\nspec = \"linear:16-1\"\ninit = \"zero\"\n"
                       << "[data]\ndataset = \"synthetic-regression\"\nvalidation_size = 1024\n"
                       << "[data.synthetic]\nexamples = 4096\ndim = 16\nnoise = 0.5\n"
                       << "[train]\ntarget = \"val_loss<=0.3\"\nlog_every = 50\n"
                       << "[optimizer]\nname = \"sgd\"\nlr = 0.05\nmomentum = 0.0\n"
                       << "[schedule]\nscaling = \"sqrt\"\nreference_batch = 32\n"
                       << "[sweep]\nbatch_sizes = [8, 32, 128, 512]\nlr_multipliers = [0.5, 2.0]\n"
                       << "max_steps = 400\neval_every_examples = 64\nlr_search = \"grid\"\n";
    const std::filesystem::path out = scratch() / "sweep";
    const Result r = run_lbt("sweep --config " + cfg.string() +
                             " --jobs 2 --no-plots --quiet --out " + out.string());
    BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
    return out;
  }();
  return dir;
}

// A copy of the real sweep named `name`.
inline std::filesystem::path sweep_copy(const std::string& name) {
  const std::filesystem::path dir = scratch() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::copy(real_sweep(), dir, std::filesystem::copy_options::recursive);
  return dir;
}

// Keeps the first `bytes` bytes of `file`.
inline void cut(const std::filesystem::path& file, std::size_t bytes) {
  const std::string text = slurp(file);
  BOOST_REQUIRE(bytes < text.size());
  std::ofstream(file, std::ios::trunc) << text.substr(0, bytes);
}

// The offset just past the `n`th newline of `file`.
inline std::size_t after_line(const std::filesystem::path& file, int n) {
  const std::string text = slurp(file);
  std::size_t at = 0;
  for (int i = 0; i < n; ++i) at = text.find('\n', at) + 1;
  return at;
}

// Exit `code` with one error line holding every one of `words`, and a hint line.
inline void expect_refusal(const Result& r, int code, std::initializer_list<std::string> words) {
  BOOST_TEST(r.code == code, r.err);
  const std::string line = error_line(r.err);
  for (const std::string& w : words) BOOST_TEST(line.find(w) != std::string::npos, line);
  BOOST_TEST(r.err.find("\nhint: ") != std::string::npos, r.err);
}

inline Result plan(const std::filesystem::path& dir, const std::string& more = "") {
  return run_lbt("plan --from " + dir.string() + " --max-steps 200 --resamples 50 " + more);
}

}  // namespace lbt::test
