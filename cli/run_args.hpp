// What `lbt train` and `lbt noise` share of their command line: the run directory, --resume
// and how an interrupted run ends.
#pragma once
#include <string>

#include "experiments/train_run.hpp"

namespace lbt::cli {

struct RunArgs {
  std::string config_path, out, resume;
  bool overwrite = false, quiet = false;
};

// --resume RUN_DIR | auto into the run's options; RUN_DIR also names the config by default
// (args.config_path is set to RUN_DIR/config.toml). `command` names the command in errors.
experiments::RunOptions run_options(RunArgs& args, const std::string& command);

// Every rank stopped after the same step; each ends with 130 or 143, rank 0 explains and gives
// `resume_command` (e.g. "lbt train --resume RUN_DIR") to continue it bit for bit.
void throw_if_interrupted(const experiments::RunResult& result, const std::string& resume_command);

}  // namespace lbt::cli
