// `lbt schedule --config FILE [--set key=value ...] [--global-batch N ...] [--steps N]
//               [--steps-per-epoch N | --train-size N] [--plot out.png] [--log-y]`
// Prints the LR curve a config yields as CSV (`step,lr`, or `step,lr_B1,lr_B2,...` for several
// global batches), evaluated from the very Schedule object trainer::make_schedule returns.
// This command loads no data, so the steps per epoch come from the flags or the config.
#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "optim/optimizer.hpp"
#include "trainer/schedule_config.hpp"

#ifndef LBT_SOURCE_DIR
#define LBT_SOURCE_DIR "."
#endif

namespace lbt::cli {

// Where notebooks/ lives: env LBT_SOURCE_DIR, else the build's source directory.
std::string lbt_source_dir() {
  if (const char* env = std::getenv("LBT_SOURCE_DIR"); env && *env) return env;
  return LBT_SOURCE_DIR;
}

namespace {

struct ScheduleArgs {
  std::string config_path;
  std::vector<std::string> sets;
  std::vector<std::int64_t> global_batches;
  std::int64_t steps = 0;
  std::int64_t steps_per_epoch = 0;
  std::int64_t train_size = 0;
  std::string plot;
  bool log_y = false;
};

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

void run_schedule(const ScheduleArgs& args) {
  Config base = Config::from_file(args.config_path);
  for (const auto& s : args.sets) base.set(s);

  std::vector<std::int64_t> batches = args.global_batches;
  if (batches.empty()) {
    Config probe = base;
    batches.push_back(probe.get_int("train.global_batch", 128, "examples per optimizer step"));
  }
  std::int64_t total_steps = args.steps;
  if (total_steps <= 0) {
    Config probe = base;
    total_steps = probe.get_int("train.steps", 0, "step budget");
    if (total_steps <= 0) total_steps = 1000;
  }

  std::vector<schedules::Schedule> curves;
  bool assumed_one_step_per_epoch = false;
  for (std::int64_t B : batches) {
    if (B <= 0) {
      throw ConfigError("--global-batch must be > 0, got " + std::to_string(B),
                        "for example --global-batch 256 1024 4096");
    }
    Config config = base;
    trainer::ScheduleContext context;
    context.base_lr = optim::base_learning_rate(config);
    context.global_batch = B;
    context.total_steps = total_steps;
    if (args.steps_per_epoch > 0) {
      context.steps_per_epoch = args.steps_per_epoch;
    } else if (args.train_size > 0) {
      context.steps_per_epoch = (args.train_size + B - 1) / B;  // a partial batch is a step
    } else if (!config.has("schedule.steps_per_epoch")) {
      context.steps_per_epoch = 1;
      assumed_one_step_per_epoch = true;
    }
    curves.push_back(trainer::make_schedule(config, context));
    if (assumed_one_step_per_epoch && curves.size() == 1 &&
        (config.get_string("schedule.warmup_unit", "steps") == "epochs" ||
         config.get_string("schedule.decay_unit", "steps") == "epochs")) {
      std::cerr << "note: steps per epoch unknown, assuming 1; pass --steps-per-epoch N or "
                   "--train-size N\n";
    }
  }

  std::ostringstream csv;
  csv << "step";
  if (batches.size() == 1) {
    csv << ",lr";
  } else {
    for (std::int64_t B : batches) csv << ",lr_B" << B;
  }
  csv << "\n";
  char value[32];
  for (std::int64_t step = 0; step < total_steps; ++step) {
    csv << step;
    for (const auto& lr : curves) {
      std::snprintf(value, sizeof value, ",%.9g", lr(step));
      csv << value;
    }
    csv << "\n";
  }
  std::cout << csv.str();

  if (!args.plot.empty()) {
    const auto csv_path = std::filesystem::path(args.plot).replace_extension(".csv");
    std::ofstream(csv_path) << csv.str();
    const std::string script = lbt_source_dir() + "/notebooks/lbt_plot.py";
    const std::string command = "/usr/bin/python3 " + shell_quote(script) + " schedule " +
                                shell_quote(csv_path.string()) + " " + shell_quote(args.plot) +
                                (args.log_y ? " --log-y" : "");
    if (std::system(command.c_str()) != 0) {
      throw Error("plotting failed: " + command,
                  "needs /usr/bin/python3 with matplotlib (python3-matplotlib); set LBT_SOURCE_DIR "
                  "to the lbt source tree if notebooks/lbt_plot.py is not found; the CSV is in " +
                      csv_path.string());
    }
    std::cerr << "wrote " << args.plot << " (data: " << csv_path.string() << ")\n";
  }
}

}  // namespace

void add_schedule_command(CLI::App& app) {
  auto args = std::make_shared<ScheduleArgs>();
  CLI::App* cmd = app.add_subcommand(
      "schedule", "Print the LR curve a config yields, as CSV (step,lr), optionally plotted");
  cmd->add_option("--config,-c", args->config_path, "TOML config")->required()->check(CLI::ExistingFile);
  cmd->add_option("--set,-s", args->sets, "Override a config key: --set schedule.decay=cosine (repeatable)");
  cmd->add_option("--global-batch,-b", args->global_batches,
                  "Global batch(es); several give one column each (default: train.global_batch)")
      ->delimiter(',');
  cmd->add_option("--steps", args->steps, "Steps to print (default: train.steps, else 1000)");
  auto* spe = cmd->add_option("--steps-per-epoch", args->steps_per_epoch,
                              "Steps per epoch, same at every batch (default: schedule.steps_per_epoch, else 1)");
  cmd->add_option("--train-size", args->train_size,
                  "Training examples per epoch; steps per epoch = ceil(N / global batch) at each batch")
      ->excludes(spe);
  cmd->add_option("--plot", args->plot, "Also draw the curve to this image (writes the CSV beside it)");
  cmd->add_flag("--log-y", args->log_y, "Logarithmic LR axis in the plot");
  cmd->callback([args] { run_schedule(*args); });
}

}  // namespace lbt::cli
