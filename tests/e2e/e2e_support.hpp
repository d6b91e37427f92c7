// What the e2e suite's files share (test_e2e.cpp, test_e2e_schedules.cpp): the real `lbt`
// binary's runner, a config written to the scratch directory, a small Fashion-MNIST slice,
// JSON lines, and the regression preset's data.
#pragma once
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"

namespace lbt::test::e2e {

namespace fs = std::filesystem;

using lbt::test::scratch;
using lbt::test::slurp;

using Result = lbt::test::CliResult;
using lbt::test::run_lbt;

inline fs::path write_config(const std::string& name, const std::string& text) {
  fs::path p = scratch() / name;
  std::ofstream(p) << text;
  return p;
}

inline const std::string kConfig =
    std::string(LBT_SOURCE_DIR) + "/experiments/configs/fmnist_mlp.toml";
// A small real slice of Fashion-MNIST: seconds, not minutes.
inline const std::string kSmall =
    " --set data.train_limit=6000 --set data.validation_size=1000"
    " --set model.spec=mlp:784-64-10 --set train.steps=120"
    " --set train.eval_every=40 --set train.log_every=10 --quiet";

inline std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(p);
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

// The npy_regression preset reads runs/regression-data/ relative to the working directory:
// write it here with the preset's generator, as docs/training.md ("Regression data") says to.
// Written aside and renamed into place: test_e2e's parts run as concurrent CTest tests, and
// one must not read the files while another writes them.
inline void ensure_regression_data() {
  const fs::path dir = "runs/regression-data";
  if (fs::exists(dir / "x_train.npy")) return;
  const fs::path aside = "runs/regression-data.part" + std::to_string(::getpid());
  const std::string cmd = "/usr/bin/python3 " + std::string(LBT_SOURCE_DIR) +
                          "/examples/make_regression_npy.py --out " + aside.string() +
                          " >/dev/null";
  BOOST_REQUIRE_EQUAL(std::system(cmd.c_str()), 0);
  std::error_code already_there;
  fs::rename(aside, dir, already_there);
  if (already_there) fs::remove_all(aside);
}

}  // namespace lbt::test::e2e
