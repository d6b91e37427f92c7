// Run directory writer; see run_dir.hpp.
#include "trainer/run_dir.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <sstream>

#include "core/error.hpp"

namespace lbt::trainer {

namespace {

// What a run writes into its directory (and what `lbt sweep` adds beside it): only a directory
// holding nothing else is replaced whole by --overwrite, so a mistyped --out never deletes a
// directory of other files.
constexpr const char* kRunOutputs[] = {"config.toml", "summary.json", "metrics.jsonl", "eval.jsonl",
                                       "noise.jsonl", "noise.png",    "checkpoints"};

bool is_run_file(const std::string& name) {
  for (const char* f : kRunOutputs) {
    if (name == f) return true;
  }
  return name == "run.lock" || name == "train.log" ||  // its lock; a sweep's log of its trial
         name.find(".tmp.") != std::string::npos;      // a killed atomic write's leftover
}

// The first of a run's outputs `path` holds ("" for none): a run would write over it. Its lock
// and the log a sweep keeps beside its trial (open as the trial starts) are not outputs.
std::string first_run_output(const std::filesystem::path& path) {
  std::error_code ec;
  for (const char* f : kRunOutputs) {
    if (std::filesystem::exists(path / f, ec)) return f;
  }
  return {};
}

// summary.json as lbt writes it from a run's first moment: a JSON object with a status. Files
// named as a run's without it are someone else's, and --overwrite does not delete them.
bool holds_lbt_summary(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path / "summary.json", ec)) return false;
  const auto summary = nlohmann::json::parse(io::read_file(path / "summary.json"), nullptr, false);
  return summary.is_object() && summary.contains("status");
}

// --overwrite replaces only a directory that holds nothing but a run's files.
void refuse_foreign_files(const std::filesystem::path& path) {
  for (const auto& entry : std::filesystem::directory_iterator(path)) {
    const std::string name = entry.path().filename().string();
    if (!is_run_file(name)) {
      throw ConfigError(
          "--overwrite would delete " + entry.path().string() + ", which is not part of a run",
          "move it out of " + path.string() + ", or choose another --out");
    }
  }
}

// A directory holding one of a run's outputs is refused, unless `overwrite` is set and it is
// a run lbt wrote (its summary.json) with nothing else in it: the user's own config.toml or
// metrics.jsonl there was overwritten (2026-11-28), or deleted by --overwrite.
void refuse_unless_replaceable(const std::filesystem::path& path, bool overwrite) {
  const std::string output = first_run_output(path);
  if (output.empty()) return;
  if (!holds_lbt_summary(path)) {
    throw ConfigError(path.string() + " holds " + output +
                          " but no run of lbt's (no summary.json "
                          "that lbt wrote): a run would write over it",
                      "move it out of " + path.string() + ", or choose another --out");
  }
  if (!overwrite) {
    throw ConfigError("run directory " + path.string() + " already holds a run",
                      "choose another --out, or pass --overwrite to replace it");
  }
  refuse_foreign_files(path);
}

// Replaces `path` as a whole: renamed aside in one step (so no reader ever sees the old run's
// checkpoints beside the new run's files, and a later --resume cannot pick them up), then
// deleted.
void replace_run_directory(const std::filesystem::path& path) {
  std::filesystem::path aside = path;
  aside += ".replaced." + std::to_string(::getpid());
  std::error_code ec;
  std::filesystem::rename(path, aside, ec);
  if (ec) {
    throw Error("cannot move the old run " + path.string() + " aside: " + ec.message(),
                "check that its parent directory is writable");
  }
  std::filesystem::remove_all(aside, ec);
  if (ec) {
    std::fprintf(stderr, "warning: the replaced run was moved to %s but not deleted: %s\n",
                 aside.c_str(), ec.message().c_str());
  }
}

}  // namespace

bool RunDirectory::holds_run(const std::filesystem::path& path) {
  return !first_run_output(path).empty();
}

void RunDirectory::check(const std::filesystem::path& path, bool overwrite) {
  refuse_unless_replaceable(path, overwrite);
  io::check_can_create_directories(path, "run directory");
}

RunDirectory::RunDirectory(const std::filesystem::path& path, bool overwrite) : path_(path) {
  refuse_unless_replaceable(path, overwrite);
  if (holds_run(path)) replace_run_directory(path);
  io::create_directories(path, "run directory");
  metrics_ = io::LineAppender(path / "metrics.jsonl");
  eval_ = io::LineAppender(path / "eval.jsonl");
}

namespace {

// Keeps the whole, parseable lines of a JSONL file written before the line of the first step
// past `step`: the run appends in order, so every line after that one was written after the
// checkpoint, the target refinement's too, whose steps lie before the crossing (kept by their
// step until 2026-11-29, they were written twice after a resume).
void truncate_jsonl(const std::filesystem::path& file, std::int64_t step) {
  if (!std::filesystem::exists(file)) return;
  std::istringstream in(io::read_file(file));
  std::string kept, line;
  int torn = 0;
  while (std::getline(in, line)) {
    const bool unterminated =
        in.eof();  // no trailing newline: a line torn by a kill or a full disk
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (unterminated || j.is_discarded() || !j.is_object() ||
        (j.contains("step") && !j["step"].is_number_integer())) {
      ++torn;
      continue;
    }
    if (!j.contains("step")) {  // a whole header line (noise.jsonl's method): the run's, kept
      kept += line + "\n";
      continue;
    }
    if (j["step"].get<std::int64_t>() > step) break;  // logged after the checkpoint, as is the rest
    kept += line + "\n";
  }
  if (torn > 0) {
    std::fprintf(stderr, "note: %s: dropped %d torn or unreadable line%s on resume\n", file.c_str(),
                 torn, torn > 1 ? "s" : "");
  }
  io::atomic_write(file, kept);
}

}  // namespace

RunDirectory RunDirectory::resume(const std::filesystem::path& path, std::int64_t step) {
  RunDirectory dir;
  dir.path_ = path;
  // A kill during an atomic write leaves its temp file (NAME.tmp.HOST.PID.RANDOM) beside the intact
  // previous version: remove those leftovers.
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(path, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->path().filename().string().find(".tmp.") != std::string::npos) {
      std::filesystem::remove(it->path(), ec);
    }
  }
  truncate_jsonl(path / "metrics.jsonl", step);
  truncate_jsonl(path / "eval.jsonl", step);
  // noise.jsonl's step is 0-based (the gradient at the parameters after `step` updates), so
  // its line for `step` is measured during the update after the checkpoint.
  truncate_jsonl(path / "noise.jsonl", step - 1);
  dir.metrics_ = io::LineAppender(path / "metrics.jsonl");
  dir.eval_ = io::LineAppender(path / "eval.jsonl");
  if (std::filesystem::exists(path / "noise.jsonl")) {
    dir.noise_ = io::LineAppender(path / "noise.jsonl");
  }
  return dir;
}

void RunDirectory::write_config(const std::string& resolved_toml) {
  io::atomic_write(path_ / "config.toml", resolved_toml);
}

void RunDirectory::write_summary(const nlohmann::json& summary) {
  io::atomic_write(path_ / "summary.json", summary.dump(2) + "\n");
}

void RunDirectory::append_noise(const nlohmann::json& line) {
  if (!noise_.is_open()) noise_ = io::LineAppender(path_ / "noise.jsonl");
  noise_.append(line.dump());
}

std::filesystem::path default_run_path(const std::string& config_path) {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&now, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::string stem =
      config_path.empty() ? "run" : std::filesystem::path(config_path).stem().string();
  return std::filesystem::path("runs") / (stem + "-" + stamp);
}

}  // namespace lbt::trainer
