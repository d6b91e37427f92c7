// Stopping a run cleanly on SIGINT (Ctrl-C) or SIGTERM (kill, SLURM before a time limit): the
// first signal asks the training loop to finish its step, write a checkpoint and summary status
// "interrupted"; a second one exits at once (the last complete checkpoint stays intact, since
// checkpoints are written to a temp file and renamed).
#pragma once

namespace lbt::trainer {

// SIGINT and SIGTERM taken by a thread of their own: blocked in the calling thread (main(),
// before any other thread starts, so every thread inherits the mask) and received by one thread
// waiting in sigwait, which runs the handler installed below. A handler that ran on a compute
// thread, inside oneDNN's GEMM, corrupted the heap: glibc's "corrupted size vs. prev_size",
// exit 134, no checkpoint, for 2 of 10 SIGTERMs sent to a worker thread (2026-11-29 audit). Until
// a handler is installed a signal ends the process as its default action does. Processes that
// never call this (the Python module, tests) get the handlers by sigaction, as before.
void take_signals_on_their_own_thread();

// For a forked child before exec (async-signal-safe): SIGINT and SIGTERM unblocked again, so the
// program it runs (an --exec trial, mpirun, python) gets them as usual.
void unblock_interrupt_signals();

// The handler `install_*` below use: on the signal thread when it runs, else by sigaction (with
// SA_RESTART). `handler` must be async-signal-safe either way. Used by lbt sweep's too.
void install_signal_handler(void (*handler)(int));

// The default action again (the process ends by the signal, without a word): for a rank that
// failed and ends the job, to which mpirun's SIGTERM is no interrupt. std::signal alone left the
// signal thread's handler, which printed "stopping after this step" as the job ended.
void restore_default_interrupts();

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
