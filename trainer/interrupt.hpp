// Stopping a run cleanly on SIGINT (Ctrl-C) or SIGTERM (kill, SLURM before a time limit): the
// first signal asks the training loop to finish its step, write a checkpoint and summary status
// "interrupted"; a second one exits at once (the last complete checkpoint stays intact, since
// checkpoints are written to a temp file and renamed).
#pragma once

namespace lbt::trainer {

// Installs the handlers (the `lbt train` command does; a library user may not want them).
void install_interrupt_handlers();

// For `--check`, which writes nothing: SIGINT or SIGTERM ends the process at once with exit code
// 130 or 143 (not killed by the signal, so a script sees the README's codes), however long the
// data load or the plan being checked is.
void install_check_interrupt_handlers();

// The first signal received since install_interrupt_handlers (SIGINT, SIGTERM), or 0. The loop
// polls it once per step; ranks agree through the step's allreduce.
int interrupt_signal();

// "SIGINT", "SIGTERM", or "signal N".
const char* signal_name(int signal);

}  // namespace lbt::trainer
