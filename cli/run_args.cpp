// See run_args.hpp.
#include "cli/run_args.hpp"

#include <filesystem>

#include "core/error.hpp"
#include "experiments/run_checkpoint.hpp"
#include "trainer/interrupt.hpp"

namespace lbt::cli {

// --resume RUN_DIR | auto into the run's options; RUN_DIR also names the config by default.
experiments::RunOptions run_options(RunArgs& args, const std::string& command) {
  experiments::RunOptions options{args.out, args.overwrite, !args.quiet};
  if (args.resume == "auto") {
    if (args.out.empty() || args.config_path.empty()) {
      throw ConfigError("--resume auto needs --config and --out",
                        "e.g. lbt " + command + " -c cfg.toml --out runs/a --resume auto");
    }
    options.resume = experiments::Resume::kAuto;
  } else if (!args.resume.empty()) {
    if (!args.out.empty() && args.out != args.resume) {
      throw ConfigError("--resume " + args.resume + " continues that run in place; --out " +
                            args.out + " differs",
                        "drop --out");
    }
    options.out = args.resume;
    options.resume = experiments::Resume::kRequired;
    // A run directory, named as such: the reader's "cannot read config file" hint points at the
    // presets, and a file given here (RUN/config.toml) would be read as a directory.
    std::error_code ec;
    if (!std::filesystem::is_directory(args.resume, ec)) {
      throw ConfigError("--resume " + args.resume + ": no run directory there",
                        "give the run's directory (the --out it trained into), e.g. --resume "
                        "runs/mlp");
    }
    experiments::refuse_resume_near_miss(args.resume);
    if (args.config_path.empty()) {  // the run's own
      const std::filesystem::path own = std::filesystem::path(args.resume) / "config.toml";
      if (!std::filesystem::exists(own, ec)) {
        throw ConfigError("--resume " + args.resume + ": the run has no config.toml",
                          "the run stopped before it wrote one: train it again with --overwrite");
      }
      // A directory read as an empty config (and "the config changed" in 12 keys), a FIFO
      // blocked the reader (2026-11-30 audit).
      if (!std::filesystem::is_regular_file(own, ec)) {
        throw ConfigError(own.string() +
                              " is not a regular file (lbt writes the run's config as "
                              "one: it was replaced)",
                          "restore it, or give the run's config with --config FILE");
      }
      if (std::filesystem::file_size(own, ec) == 0 && !ec) {
        throw ConfigError(own.string() + " is empty (lbt writes it whole: it was emptied)",
                          "restore it, or give the run's config with --config FILE");
      }
      args.config_path = own.string();
    }
  }
  if (args.config_path.empty()) {
    throw ConfigError("lbt " + command + " needs --config FILE (or --resume RUN_DIR)",
                      "presets live in experiments/configs/, e.g. fmnist_mlp.toml");
  }
  return options;
}

// Every rank stopped after the same step; each ends with 130 or 143, rank 0 explains.
void throw_if_interrupted(const experiments::RunResult& result, const std::string& resume_command) {
  const auto& o = result.outcome;
  if (o.status != "interrupted") return;
  throw Interrupted(o.interrupt_signal,
                    std::string("interrupted by ") + trainer::signal_name(o.interrupt_signal) +
                        " after step " + std::to_string(o.steps) +
                        "; its checkpoint and summary.json (status interrupted) are in " +
                        result.run_dir.string(),
                    "continue it bit for bit with: " + resume_command);
}

}  // namespace lbt::cli
