// The SLURM array script; see sweep_slurm.hpp.
#include "experiments/sweep/sweep_slurm.hpp"

#include <cstdio>
#include <cstdlib>

#include "core/error.hpp"
#include "core/io.hpp"
#include "core/toml_text.hpp"
#include "experiments/child_process.hpp"

namespace lbt::experiments {
namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string sbatch_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

namespace {

// sbatch FILE, its output (the job's id) printed after it. A child process, not std::system: its
// status read as an exit code (the raw wait status said "exit 32512" for 127), and Ctrl-C
// reaches it (this process blocks SIGINT in every thread; child_process.hpp unblocks it).
void submit(const fs::path& file) {
  const std::string hint = "check that SLURM's sbatch is on PATH, or submit the script by hand";
  if (find_executable("sbatch").empty())
    throw Error("--submit: no sbatch on PATH; the script is " + file.string(), hint);
  const fs::path log = file.parent_path() / "slurm" / "sbatch.log";
  io::create_directories(log.parent_path(), "the sweep's slurm directory");
  fs::remove(log);
  const ChildExit e = wait_child(spawn_logged("sbatch", {file.string()}, log));
  if (e.exit_code == 0) return (void)std::fputs(io::read_file(log).c_str(), stdout);
  // sbatch ran and refused the script: its words, once, and the fix is in them or the script.
  throw Error("sbatch " + file.string() + " failed (" + exit_text(e) + "): " + tail_lines(log, 3),
              "fix what sbatch names (sweep.slurm_options, sweep.slurm_time, the account), "
              "then rerun with --submit");
}

// Options lbt writes itself: given in sweep.slurm_options too, sbatch took the later line
// without a word (--array=0-99 would start tasks past the plan: 2026-11-29 audit).
void refuse_own_options(const std::vector<std::string>& options) {
  for (const std::string& o : options) {
    for (const char* own : {"--array", "-a", "--output", "-o", "--cpus-per-task", "-c", "--time",
                            "-t", "--job-name", "-J"}) {
      const std::string flag = own;
      if (o == flag || o.starts_with(flag + "=") || o.starts_with(flag + " ")) {
        throw ConfigError("sweep.slurm_options: '" + o + "' sets what lbt writes itself",
                          "use sweep.slurm_time and sweep.slurm_cpus_per_task; the array, its "
                          "logs and the job's name follow the sweep");
      }
    }
  }
}

void refuse_control_characters(const std::string& what, const std::string& value) {
  if (comment_text(value) == value) return;  // no control character
  throw ConfigError("--launcher slurm: " + what +
                        " holds a newline or another control character, " +
                        "which would end a line of sweep.sbatch and start one of shell code",
                    "remove it (a directory: rename it) or use --launcher local");
}

}  // namespace

void check_slurm_script_inputs(const SweepOptions& options, const SweepSettings& settings,
                               const fs::path& dir) {
  // The names in the message with their control characters as '?': the message is one line.
  refuse_control_characters("the sweep directory " + comment_text(fs::absolute(dir).string()),
                            fs::absolute(dir).string());
  refuse_control_characters("the config's path", fs::absolute(options.config_path).string());
  for (const auto& s : options.sets) refuse_control_characters("--set " + comment_text(s), s);
  refuse_control_characters("--exec", options.exec_command);
  refuse_control_characters("sweep.slurm_time", settings.slurm_time);
  for (const auto& o : settings.slurm_options) refuse_control_characters("sweep.slurm_options", o);
  refuse_own_options(settings.slurm_options);
  // SLURM drops every backslash of an --output path and then fills in no %A_%a: no task's log
  // could be opened, and no task started (2026-11-29 audit).
  if (fs::absolute(dir).string().find('\\') != std::string::npos) {
    throw ConfigError("--launcher slurm: the sweep directory " +
                          comment_text(fs::absolute(dir).string()) +
                          " holds a backslash, which SLURM drops from the tasks' log paths",
                      "rename it without '\\', or use --launcher local");
  }
}

void write_slurm_array(const SlurmArray& a) {
  const SweepOptions& options = a.options;
  const SweepSettings& settings = a.settings;
  const fs::path& dir = a.dir;
  const std::string& time = settings.slurm_time;
  const std::int64_t cpus = settings.slurm_cpus_per_task;
  const auto& extra = settings.slurm_options;
  fs::create_directories(dir / "slurm");
  std::string cmd = shell_quote(a.lbt.string()) + " sweep --config " +
                    shell_quote(fs::absolute(options.config_path).string()) + " --out " +
                    shell_quote(dir.string());
  std::string sizes;
  for (auto b : settings.batch_sizes) {
    if (!sizes.empty()) sizes += ',';  // not ("" or ",") + to_string: GCC 12's false -Wrestrict
    sizes += std::to_string(b);
  }
  cmd += " --batch-sizes " + sizes + " --target " + shell_quote(settings.target);
  if (options.lr_trials > 0) cmd += " --lr-trials " + std::to_string(options.lr_trials);
  for (const auto& s : options.sets) cmd += " --set " + shell_quote(s);
  if (!options.exec_command.empty()) cmd += " --exec " + shell_quote(options.exec_command);
  // The trials decided so far and not yet finished, by name: the adaptive search adds the
  // next round once these end, so rerun this command after the array to submit it.
  std::string names;
  for (const std::string& name : a.pending) names += (names.empty() ? "" : " ") + name;
  const std::size_t pending = a.pending.size();
  const std::string collect = cmd + " --collect";
  if (pending == 0) {
    std::fprintf(stderr, "[sweep] every trial of the plan has ended; collect with\n  %s\n",
                 collect.c_str());
    return;
  }
  if (options.retry_failed) cmd += " --retry-failed";  // a task's failed trial runs again
  cmd += " --no-plots --trial \"${trials[$SLURM_ARRAY_TASK_ID]}\"";
  std::string script = "#!/bin/bash\n# Written by lbt sweep: one array task per trial (" +
                       std::to_string(pending) + " of the " + std::to_string(a.planned) +
                       " planned so far). When the array has ended, rerun\n#   lbt sweep ... "
                       "--launcher slurm\n# for the LR search's next round and the seeds, "
                       "until it says every trial has ended; then\n#   " +
                       collect + "\n";
  script += "#SBATCH --job-name=lbt-sweep\n";
  script += "#SBATCH --array=0-" + std::to_string(pending - 1) + "%" +
            std::to_string(options.jobs) + "\n";
  script += "#SBATCH --cpus-per-task=" + std::to_string(cpus) + "\n";
  script += "#SBATCH --time=" + time + "\n";
  // sbatch fills in %A and %a in the whole path: a % of the directory's own is written %%.
  std::string logs = (dir / "slurm").string();
  for (std::size_t at = logs.find('%'); at != std::string::npos; at = logs.find('%', at + 2))
    logs.insert(at, 1, '%');
  script += "#SBATCH --output=" + sbatch_quote(logs + "/%A_%a.out") + "\n";
  for (const auto& line : extra) script += "#SBATCH " + line + "\n";
  // A task past the list (an array resubmitted with another --array) says so: bash said only
  // "trials[N]: unbound variable".
  script += "set -euo pipefail\ntrials=(" + names + ")\n" +
            "if [ \"${SLURM_ARRAY_TASK_ID:-x}\" -ge ${#trials[@]} ] 2>/dev/null; then\n"
            "  echo \"lbt sweep: array task $SLURM_ARRAY_TASK_ID is past this script's " +
            std::to_string(pending) +
            " trials: it was submitted with another --array; cancel it (scancel)\" >&2\n"
            "  exit 2\nfi\nexec " +
            cmd + "\n";
  const fs::path file = dir / "sweep.sbatch";
  io::atomic_write(file, script);
  fs::permissions(file, fs::perms::owner_exec, fs::perm_options::add);
  std::fprintf(stderr, "[sweep] wrote %s (%zu array tasks)\n", file.c_str(), pending);
  if (options.submit) submit(file);
}

}  // namespace lbt::experiments
