// `lbt schedule --config FILE [--set key=value ...] [--global-batch N ...] [--steps N]
//               [--steps-per-epoch N | --train-size N] [--plot out.png] [--log-y]`
// Prints the LR curve a config yields as CSV (`step,lr`, or `step,lr_B1,lr_B2,...` for several
// global batches), evaluated from the very Schedule object schedules::make_schedule returns.
// Steps per epoch and the run's length come from the data and train.epochs / train.steps
// exactly as the trainer counts them, unless --steps-per-epoch or --train-size give them.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "core/io.hpp"
#include "experiments/lbt_schema.hpp"
#include "experiments/plots.hpp"
#include "trainer/config/run_config.hpp"

namespace lbt::cli {

namespace {

struct ScheduleArgs {
  std::string config_path;
  std::vector<std::string> sets;
  std::vector<std::int64_t> global_batches;
  std::int64_t steps = 0;
  std::int64_t steps_per_epoch = 0;
  std::int64_t train_size = 0;
  std::int64_t every = 1;  // rows of every N-th step (and each column's last step)
  int workers = 1;
  std::string plot;
  bool log_y = false;
  std::string plot_x = "auto";  // step | epoch | auto (epoch for several batches)
};

// The schedule's notes for one batch to stderr, each line prefixed after its "warning: " or
// "note: " with `batch` ("B=4096: ") where several are shown; a line given already, once.
void print_notes(const std::string& text, const std::string& batch,
                 std::set<std::string>& printed) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!printed.insert(line).second) continue;
    const std::size_t colon = line.find(": ");
    const bool tagged = line.rfind("warning: ", 0) == 0 || line.rfind("note: ", 0) == 0;
    if (tagged && !batch.empty()) line.insert(colon + 2, batch);
    std::cerr << line << "\n";
  }
}

// The plot's data, beside it: out.png -> out.csv. A CSV there that lbt schedule did not write
// (its header is not step,lr...) is someone's data: refused, not replaced; so is a place no
// directory can be made for them (a parent that is a file: Python's traceback said so, after
// the work, and the hint blamed matplotlib).
std::filesystem::path plot_data_path(const std::string& plot) {
  const auto csv_path = std::filesystem::path(plot).replace_extension(".csv");
  if (csv_path == std::filesystem::path(plot)) {
    throw ConfigError("--plot " + plot + " names a CSV file; the plot is an image",
                      "give an image name (out.png, out.pdf, out.svg): its data goes beside it");
  }
  // matplotlib picks the format by the extension: another one (s.toml) ended in its traceback,
  // none in a file it named afile.png while lbt said "wrote afile".
  const std::string extension = std::filesystem::path(plot).extension().string();
  if (extension != ".png" && extension != ".pdf" && extension != ".svg") {
    throw ConfigError("--plot " + plot + ": an image name ends in .png, .pdf or .svg",
                      "e.g. --plot " + csv_path.stem().string() + ".png");
  }
  // A directory in either place: the CSV written, then matplotlib's traceback, or the whole CSV
  // on stdout, then "cannot write" (2026-11-29 audit).
  std::error_code ec;
  for (const std::filesystem::path& p : {std::filesystem::path(plot), csv_path})
    if (std::filesystem::is_directory(p, ec))
      throw ConfigError("--plot " + plot + ": " + p.string() + " is a directory",
                        "choose another --plot name, or move that directory");
  std::string header;
  // Not a regular file (a FIFO would block the read, the rename would replace it): refused too.
  const bool other =
      std::filesystem::exists(csv_path, ec) && !std::filesystem::is_regular_file(csv_path, ec);
  if (std::ifstream existing = io::open_regular_file(csv_path);
      other || (existing && std::getline(existing, header) && !header.starts_with("step,lr"))) {
    throw ConfigError("--plot " + plot + ": its data would replace " + csv_path.string() +
                          ", which lbt schedule did not write",
                      "choose another --plot name, or move that file");
  }
  io::check_can_create_directories(std::filesystem::absolute(csv_path).parent_path(),
                                   "the plot's directory");
  return csv_path;
}

void run_schedule(const ScheduleArgs& args) {
  if (!args.plot.empty()) plot_data_path(args.plot);  // refused before any work
  Config config = experiments::load_config(args.config_path, args.sets, notes_stream());
  if (args.steps > 0) config.set("train.steps=" + std::to_string(args.steps));
  // The config's own batch is checked against --workers only where no -b replaces it (-b 1026
  // --workers 3 was refused for the config's 128; each -b is checked below).
  const trainer::RunConfig base =
      trainer::resolve_run_config(config, args.global_batches.empty() ? args.workers : 1);

  std::vector<std::int64_t> batches = args.global_batches;
  if (batches.empty()) batches.push_back(base.train.global_batch);
  // Without --steps-per-epoch the data decide, as in the trainer: its training examples.
  const trainer::PreviewEpochs epochs =
      trainer::preview_epochs(base, args.steps_per_epoch, args.train_size);

  std::vector<schedules::Schedule> curves;
  std::set<std::string> printed;  // notes given for an earlier batch
  std::vector<std::int64_t> lengths;
  nlohmann::json marks = nlohmann::json::object();      // column -> [[name, step], ...] for --plot
  nlohmann::json per_epoch = nlohmann::json::object();  // column -> steps per epoch
  for (std::int64_t B : batches) {
    if (B <= 0 || B % args.workers != 0) {
      const std::int64_t w = args.workers, near = std::max<std::int64_t>(w, (B + w - 1) / w * w);
      throw ConfigError("--global-batch must be a positive multiple of --workers (" +
                            std::to_string(w) + "), got " + std::to_string(B),
                        "for example --global-batch " + std::to_string(near));
    }
    // The same run at batch B: only the batch layout changes; the reference batch stays the
    // config's, so the scaling rule shows.
    const trainer::RunConfig run = trainer::at_global_batch(base, B, args.workers);
    const trainer::StepBudget budget = trainer::schedule_budget(
        run.train, epochs.train_examples, epochs.steps_per_epoch, args.workers);
    std::vector<std::pair<std::string, std::int64_t>> boundaries;
    std::ostringstream notes;  // every batch's (the first's only until 2026-11-29), each once
    curves.push_back(
        trainer::run_schedule(run, budget, &notes, &boundaries, schedules::WarmupPastRun::kNote));
    print_notes(notes.str(), batches.size() > 1 ? "B=" + std::to_string(B) + ": " : "", printed);
    lengths.push_back(budget.total_steps);
    const std::string column = batches.size() == 1 ? "lr" : "lr_B" + std::to_string(B);
    marks[column] = boundaries;
    per_epoch[column] = budget.steps_per_epoch;
  }
  const std::int64_t total_steps = *std::max_element(lengths.begin(), lengths.end());

  // The CSV goes out a row at a time, to stdout and for --plot to its data file (written aside,
  // then renamed): built whole in memory, 3e8 steps under a memory limit were cut short with
  // exit 0 (2026-11-28).
  std::filesystem::path csv_path, csv_aside;
  std::ofstream data;
  if (!args.plot.empty()) {
    csv_path = plot_data_path(args.plot);
    io::create_directories(std::filesystem::absolute(csv_path).parent_path(),
                           "the plot's directory");
    csv_aside = io::temporary_twin(csv_path).string();
    data.open(csv_aside, std::ios::binary | std::ios::trunc);
  }
  const auto emit = [&](const std::string& text) {
    std::cout << text;
    if (data.is_open()) data << text;
  };
  std::string row = "step";
  if (batches.size() == 1) {
    row += ",lr";
  } else {
    for (std::int64_t B : batches) row += ",lr_B" + std::to_string(B);
  }
  emit(row + "\n");
  // Shortest round-trip form: the LR the trainer writes to metrics.jsonl, bit for bit.
  char value[32];
  // Every N-th step, and each run's last step: a long run's curve without millions of rows.
  const auto next_printed = [&](std::int64_t step) {
    std::int64_t next = (step / args.every + 1) * args.every;
    for (std::int64_t length : lengths)
      if (length - 1 > step && length - 1 < next) next = length - 1;
    return next;
  };
  std::int64_t rows = 0;
  for (std::int64_t step = 0; step < total_steps; step = next_printed(step)) {
    row = std::to_string(step);
    for (std::size_t c = 0; c < curves.size(); ++c) {
      row += ',';
      if (step >= lengths[c]) continue;  // that batch's run has ended
      row.append(value, std::to_chars(value, value + sizeof value, curves[c](step)).ptr);
    }
    emit(row += '\n');
    // A full disk or a closed pipe, said then: not after every step was printed.
    if (++rows % 65536 == 0 && !std::cout)
      throw Error("writing the CSV to stdout failed at step " + std::to_string(step),
                  "check the disk or pipe it is written to");
  }
  if (!std::cout.flush())
    throw Error("writing the CSV to stdout failed", "check the disk or pipe it is written to");

  if (!args.plot.empty()) {
    data.close();
    int err = data ? 0 : errno;  // what the failed write or close left (ENOSPC: a full disk)
    std::error_code ec;
    if (data) std::filesystem::rename(csv_aside, csv_path, ec);
    if (ec) err = ec.value();
    if (!data || ec) {
      std::filesystem::remove(csv_aside, ec);
      throw Error(
          "cannot write " + csv_path.string() + (err ? ": " + std::string(std::strerror(err)) : ""),
          io::file_error_hint(err, "check that its directory is writable"));
    }
    // Several batches run different steps over the same data: against epochs they line up.
    const std::string x =
        args.plot_x != "auto" ? args.plot_x : (batches.size() > 1 ? "epoch" : "step");
    std::vector<std::string> plot_args = {"schedule", csv_path.string(),   args.plot,
                                          "--marks",  marks.dump(),        "--x",
                                          x,          "--steps-per-epoch", per_epoch.dump()};
    if (args.log_y) plot_args.push_back("--log-y");
    if (const std::string why = experiments::run_plot_script("lbt_plot.py", plot_args);
        !why.empty()) {
      throw Error("plotting failed: " + why,
                  "its Python error is above (the usual causes: /usr/bin/python3 without "
                  "matplotlib, python3-matplotlib; a full disk); the CSV is in " +
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
  cmd->add_option("--config,-c", args->config_path, "TOML config")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--set,-s", args->sets,
                  "Override a config key: --set schedule.decay=cosine (repeatable)");
  cmd->add_option("--global-batch,-b", args->global_batches,
                  "Global batch(es); several give one column each (default: train.global_batch)")
      ->delimiter(',')
      ->check(whole_number<std::int64_t>());
  cmd->add_option("--steps", args->steps,
                  "Run length in steps, as train.steps (default: the config's train.steps or "
                  "train.epochs, as the trainer counts them)")
      ->check(whole_number<std::int64_t>());
  auto* spe = cmd->add_option("--steps-per-epoch", args->steps_per_epoch,
                              "Steps per epoch at every batch, instead of loading the data "
                              "(default: schedule.steps_per_epoch, else the data's)")
                  ->check(whole_number<std::int64_t>());
  cmd->add_option("--train-size", args->train_size,
                  "Training examples, instead of loading the data: steps per epoch = "
                  "floor(N / workers) / (global batch / workers), as the trainer counts")
      ->check(whole_number<std::int64_t>())
      ->excludes(spe);
  cmd->add_option("--every", args->every,
                  "Print every N-th step (and each run's last step) instead of every step; the "
                  "values are the same (default 1)")
      ->check(whole_number<std::int64_t>());
  cmd->add_option("--workers", args->workers, "Ranks the run will use (default 1)")
      ->check(whole_number<int>());
  cmd->add_option(
         "--plot", args->plot,
         "Also draw the curve to this image, .png, .pdf or .svg (writes the CSV beside it)")
      ->check(non_empty_path());
  cmd->add_flag("--log-y", args->log_y, "Logarithmic LR axis in the plot");
  cmd->add_option("--plot-x", args->plot_x,
                  "The plot's x axis: step, epoch, or auto (epoch when several batches are "
                  "given: their runs cover the same data in different steps; default auto)")
      ->check(CLI::IsMember({"auto", "step", "epoch"}));
  cmd->footer(config_keys_footer());
  cmd->callback([args] {
    keep_first_of_each(args->global_batches);
    run_schedule(*args);
  });
}

}  // namespace lbt::cli
