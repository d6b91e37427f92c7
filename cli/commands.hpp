// Subcommand registration: each cmd_*.cpp adds one subcommand to the CLI11 app and sets its
// callback; main.cpp only wires them and turns lbt::Error into "error:"/"hint:" lines.
#pragma once
#include <CLI/CLI.hpp>
#include <iosfwd>
#include <string>
#include <vector>

namespace lbt {
class Config;
}

namespace lbt::cli {

// The whole command line (cli/main.cpp): lbt's main and lbt-cuda's (cli/lbt_main.cpp,
// cli/cuda_main.cpp) call it after registering what their program can run.
int run_lbt(int argc, char** argv);

void add_train_command(CLI::App& app);
void add_schedule_command(CLI::App& app);
void add_sweep_command(CLI::App& app);
void add_fit_command(CLI::App& app);
void add_scaling_command(CLI::App& app);
void add_noise_command(CLI::App& app);
void add_plan_command(CLI::App& app);
void add_memory_command(CLI::App& app);
void add_doctor_command(CLI::App& app);
void add_cbs_command(CLI::App& app);

// model.device other than "cpu" where this program has no step for it (lbt, not lbt-cuda): the
// command goes on in lbt-cuda beside it, with the same arguments, before anything is loaded or
// written (exec; lbt itself does not load the CUDA libraries). What the device cannot run is
// refused first, on every machine, built with CUDA or not. Returns (and the command goes on here)
// for "cpu" or where this program has the device's step.
void continue_on_device(Config& config);

// Where config notes go: stderr on the first rank (or without MPI), nowhere on the others.
std::ostream* notes_stream();
// `lbt train --set sweep.max_steps=100` reads like a limit on the run, but only lbt sweep reads
// sweep.* keys: `command` (train, noise) says so on notes_stream() rather than drop it unsaid.
void note_sweep_sets(const std::vector<std::string>& sets, const char* command);
// The config-key listing every command that takes --config prints after its options.
std::string config_keys_footer();

}  // namespace lbt::cli
