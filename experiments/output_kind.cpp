// Which lbt command wrote a directory; see output_kind.hpp.
#include "experiments/output_kind.hpp"

#include <string>
#include <system_error>

#include "core/error.hpp"
#include "trainer/run_dir.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;

namespace {

bool has_any(const fs::path& dir, std::initializer_list<const char*> names) {
  std::error_code ec;
  for (const char* name : names)
    if (fs::exists(dir / name, ec)) return true;
  return false;
}

// What the error line calls each kind, with the files that tell it.
std::string describe(OutputKind kind) {
  switch (kind) {
    case OutputKind::kRun:
      return "a run directory (config.toml, summary.json, checkpoints/)";
    case OutputKind::kInner:
      return "a folder lbt keeps inside a run, sweep or lbt cbs directory";
    case OutputKind::kSweep:
      return "an lbt sweep directory (sweep.json)";
    case OutputKind::kCbs:
      return "an lbt cbs directory (cbs_settings.json)";
    case OutputKind::kScaling:
      return "an lbt scaling study (scaling.csv)";
    case OutputKind::kNone:
      break;
  }
  return "nothing of lbt's";
}

}  // namespace

OutputKind output_kind(const fs::path& dir) {
  if (has_any(dir, {"sweep.json", "base_config.toml", "sweep.lock"})) return OutputKind::kSweep;
  if (has_any(dir, {"cbs_settings.json", "cbs.json", "cbs.lock"})) return OutputKind::kCbs;
  if (has_any(dir, {"scaling.csv", "scaling_runs.csv", "scaling.lock"}))
    return OutputKind::kScaling;
  if (trainer::RunDirectory::holds_run(dir)) return OutputKind::kRun;
  // A folder the commands keep inside their directories: a run's checkpoints/, a sweep's
  // trials/, lbt cbs's branches/ (each read back by name).
  fs::path normal = dir.lexically_normal();
  if (normal.filename().empty()) normal = normal.parent_path();  // "r1/checkpoints/"
  const std::string name = normal.filename().string();
  const OutputKind parent = name == "checkpoints" || name == "trials" || name == "branches"
                                ? output_kind(normal.parent_path())
                                : OutputKind::kNone;
  if ((name == "checkpoints" && parent == OutputKind::kRun) ||
      (name == "trials" && parent == OutputKind::kSweep) ||
      (name == "branches" && parent == OutputKind::kCbs))
    return OutputKind::kInner;
  return OutputKind::kNone;
}

void refuse_replacing_a_member_run(const fs::path& dir) {
  fs::path normal = dir.lexically_normal();
  if (normal.filename().empty()) normal = normal.parent_path();
  if (!trainer::RunDirectory::holds_run(normal) ||
      output_kind(normal.parent_path()) != OutputKind::kInner)
    return;
  throw ConfigError(dir.string() + " is one of the runs of " +
                        normal.parent_path().parent_path().string() +
                        " (an lbt sweep's trials or an lbt cbs's branches), which reads it back; "
                        "--overwrite would put another run in its place",
                    "give --out a new directory; lbt sweep and lbt cbs rerun their own runs");
}

void refuse_other_output(const fs::path& dir, OutputKind mine, std::string_view command) {
  // `--out "$RUNS/$NAME"` with both unset is "/": the filesystem root holds unrelated files, so
  // the rule below would take it, and the run's files would land beside /etc.
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(dir, ec);
  if (!ec && resolved == resolved.root_path()) {
    throw ConfigError("--out " + dir.string() + " is the filesystem root; " + std::string(command) +
                          " would write its files there",
                      "give --out a directory of its own, such as runs/NAME (an unset shell "
                      "variable in --out \"$DIR/$NAME\" leaves just /)");
  }
  const OutputKind found = output_kind(dir);
  if (found == OutputKind::kNone || found == mine) return;
  throw ConfigError(dir.string() + " is " + describe(found) + "; " + std::string(command) +
                        " would mix its files into it",
                    "give --out a new directory");
}

}  // namespace lbt::experiments
