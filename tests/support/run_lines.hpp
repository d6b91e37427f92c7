// What a run directory logged, for tests that compare two runs bit for bit: metrics.jsonl /
// eval.jsonl lines without their wall-clock fields, and the final checkpoint's parameters.
#pragma once
#include <cstddef>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"
#include "trainer/checkpoint.hpp"

namespace lbt::test {

inline std::vector<nlohmann::json> lines_without_timing(const std::filesystem::path& file) {
  std::vector<nlohmann::json> out;
  std::istringstream in(slurp(file));
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    j.erase("wall_time");
    j.erase("samples_per_s");
    out.push_back(j);
  }
  return out;
}

// The parameters of the run's last checkpoint (summary.json's steps).
inline std::vector<std::byte> final_params(const std::filesystem::path& run) {
  const auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  const auto ck = trainer::read_checkpoint(
      trainer::checkpoint_path(run / "checkpoints", summary["steps"].get<std::int64_t>()));
  return ck.sections.at("params");
}

}  // namespace lbt::test
