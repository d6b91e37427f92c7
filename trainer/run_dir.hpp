// A run is a directory (docs/DESIGN.md): config.toml (fully resolved), metrics.jsonl,
// eval.jsonl, noise.jsonl, summary.json. summary.json says "running" from the first moment,
// so a directory whose run did not finish never looks complete.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "core/io.hpp"

namespace lbt::trainer {

class RunDirectory {
 public:
  // Creates `path`; refuses a directory that already holds a run (summary.json, config.toml,
  // checkpoints/ or any other file a run writes) unless `overwrite` is set, so an earlier result
  // is never clobbered by accident. With `overwrite` the old run is replaced as a whole (renamed
  // aside atomically, then deleted: its checkpoints cannot be resumed into the new run); a
  // directory that also holds files a run does not write, or whose run files have no summary.json
  // that lbt wrote (someone's own config.toml, say), is refused instead, naming one.
  RunDirectory(const std::filesystem::path& path, bool overwrite);
  // What the constructor would refuse, found without writing anything (--check): a run already
  // there (without `overwrite`), files that are not a run's (with it), or a place no directory
  // can be made (io::check_can_create_directories).
  static void check(const std::filesystem::path& path, bool overwrite);
  // Whether `path` holds any of a run's outputs (its lock aside): a run there would write over
  // them.
  static bool holds_run(const std::filesystem::path& path);
  // Reopens an existing run to continue it from `step`: metrics lines past `step` (written
  // after the checkpoint by the run that was killed) and any torn last line are dropped, so no
  // step is logged twice.
  static RunDirectory resume(const std::filesystem::path& path, std::int64_t step);

  const std::filesystem::path& path() const { return path_; }
  void write_config(const std::string& resolved_toml);
  void write_summary(const nlohmann::json& summary);  // atomic
  void append_metrics(const nlohmann::json& line) { metrics_.append(line.dump()); }
  void append_eval(const nlohmann::json& line) { eval_.append(line.dump()); }
  void append_noise(const nlohmann::json& line);

 private:
  RunDirectory() = default;
  std::filesystem::path path_;
  io::LineAppender metrics_, eval_, noise_;
};

// Default location for a run: runs/<config stem>-<YYYYmmdd-HHMMSS>.
std::filesystem::path default_run_path(const std::string& config_path);

}  // namespace lbt::trainer
