// The command line of an `lbt sweep --exec` trial, built without pasting values into shell code.
// The template is split into words as a POSIX shell would (single quotes, double quotes,
// backslashes) and each placeholder ({run_dir}, {lr}, {section.key}, ...) is replaced inside its
// word, so a value is one argument whatever it holds (spaces, quotes, `$(...)`, `;`, newlines).
// A template that uses shell syntax (a pipe, a redirection, `;`, `&&`, `$VAR`, a glob, ...) runs
// as `sh -c TEMPLATE sh VALUE1 VALUE2 ...` with each placeholder rewritten to a quoted positional
// parameter ("${1}"): the shell reads the user's syntax, never the values.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "experiments/sweep/sweep_plan.hpp"

namespace lbt::experiments {

struct ExecCommand {
  std::vector<std::string> argv;  // argv[0]: the program (a path, or a name to find on PATH)
  bool via_shell = false;         // argv is {"/bin/sh", "-c", SCRIPT, "sh", values...}
};

// Placeholder name -> value for one trial: {batch_size} {lr} {seed} {run_dir} {max_steps}
// {eval_every} {threads} (cores / --jobs, as lbt's own trials get) and every key the sweep sets,
// as {section.key}.
std::map<std::string, std::string> placeholder_values(const Trial& trial, std::int64_t base_seed,
                                                      const std::filesystem::path& run_dir,
                                                      int threads = 1);

// A program's share of the cores, as lbt's own trials are told it: LBT_THREADS, and
// OMP_NUM_THREADS unless the sweep's environment sets it (each program took every core, and
// --jobs 2 ran 6x slower; 2026-11-30 audit). {threads} holds it too.
std::vector<std::string> exec_thread_environment(int threads);

// The trial's command. Throws ConfigError for an unknown placeholder or an unterminated quote.
ExecCommand build_exec_command(const std::string& command_template,
                               const std::map<std::string, std::string>& values);

// argv as one shell line that runs the same program with the same arguments (command.sh, the
// resume hint): each word single-quoted where it holds anything but plain characters.
std::string shell_line(const std::vector<std::string>& argv);
std::string shell_word(const std::string& word);

}  // namespace lbt::experiments
