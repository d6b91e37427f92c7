// `lbt memory --config FILE [--set key=value ...] [-b B,...] [--workers N] [--memory 16GiB]
//  [--probe]`: bytes per rank by part, the largest micro-batch that fits the memory, and with
// --probe real training steps in child processes whose peak RSS checks the estimate.
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"
#include "experiments/memory/memory_probe.hpp"
#include "experiments/memory/memory_report.hpp"

namespace lbt::cli {

namespace {
struct MemoryArgs {
  experiments::MemoryOptions options;
  std::string memory = "16GiB";
  bool mpi_runtime = false;  // hidden: one rank of measure_mpi_runtime's mpirun job
};

void run_memory(MemoryArgs& args) {
  if (args.mpi_runtime) return experiments::mpi_runtime_main();
  experiments::MemoryOptions& o = args.options;
  if (o.workers < 1) {
    throw ConfigError("--workers " + std::to_string(o.workers) + ": a rank count is at least 1",
                      "pass --workers 1 or more");
  }
  o.memory = trainer::parse_memory_size(args.memory, "--memory");  // before any work
  o.measure_mpi_runtime = true;
  const experiments::MemoryReport report = experiments::memory_report(o);
  std::printf("%s", experiments::format_memory_report(report).c_str());
  if (!report.probes_ok()) {
    char percent[32];  // as given: --tolerance 0.004 read "more than 0%"
    std::snprintf(percent, sizeof percent, "%g%%", 100 * o.tolerance);
    throw Error("lbt memory --probe: a measured peak is off the estimate by more than " +
                    std::string(percent) + " and 8 MiB (the OFF rows above)",
                "the estimate misses an allocation: compare the parts with the layers' buffers");
  }
}
}  // namespace

void add_memory_command(CLI::App& app) {
  auto args = std::make_shared<MemoryArgs>();
  experiments::MemoryOptions& o = args->options;
  CLI::App* cmd = app.add_subcommand(
      "memory",
      "Bytes per rank (parameters, gradients, optimizer state replicated and ZeRO-1 sharded, "
      "activations, layer workspaces, prefetch, data, runtime) and the largest micro-batch "
      "that fits; --probe checks the estimate against real steps");
  cmd->add_option("--config,-c", o.config_path, "TOML config")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--set,-s", o.sets, "Override a config key: --set model.spec=mlp:784-1024-10");
  cmd->add_option("--global-batch,-b", o.global_batches,
                  "Global batch(es), one column each, at the micro-batch lbt train resolves "
                  "(default: train.global_batch)")
      ->delimiter(',')
      ->check(whole_number<std::int64_t>());
  cmd->add_option("--workers", o.workers,
                  "Data-parallel ranks on one node (default 1); beyond 1, mpirun measures an MPI "
                  "rank's baseline for the runtime part")
      ->check(whole_number<int>(0));  // 0: run_memory says a rank count is at least 1
  cmd->add_flag("--mpi-runtime", args->mpi_runtime, "(internal: one rank of that measurement)")
      ->group("");
  cmd->add_option("--memory", args->memory,
                  "Memory per rank: a number and a unit, B, KB, MB, GB, TB (powers of 1000) or "
                  "KiB, MiB, GiB, TiB (powers of 1024), e.g. 16GiB, 512MB (default 16GiB)");
  cmd->add_flag(
      "--probe", o.probe,
      "Run lbt train for 2 steps at each -b as its micro-batch (default: the config's "
      "micro-batch x 1, 4, 16), each in a fresh process: one rank, or mpirun -np "
      "N for --workers N; compare each rank's peak RSS with its estimate; exit 1 when one is "
      "off by more than --tolerance; exit 2 when the machine lacks the memory for "
      "--workers ranks at once");
  cmd->add_option("--tolerance", o.tolerance, "Allowed |measured / estimate - 1| (default 0.10)")
      ->check(number_in(0.0, 1.0));
  cmd->footer(
      "The estimate counts what lbt's trainer allocates: the flat parameter and gradient\n"
      "buffers, one optimizer state buffer per moment (SGD 0, momentum/Nesterov/LARS 1,\n"
      "Adam/AdamW/LAMB 2; every rank keeps a whole copy, the sharded step updates only its\n"
      "range, so the ZeRO-1 column is what sharding the state would save), each layer's output\n"
      "and its gradient at max(micro-batch, train.eval_batch), the layers' workspaces, the\n"
      "prefetch ring (3 micro-batches), the evaluation batch, two snapshots of parameters and\n"
      "state, the dataset held in memory (and its extra copy while loading), and the process's\n"
      "own resident set before loading (runtime; with --workers > 1 an MPI rank's, measured\n"
      "by mpirun -np N after MPI_Init). Several ranks on one node reduce the gradient in a\n"
      "shared-memory window: each rank's gradient is its slot there (whole pages), and\n"
      "'communication' counts the pages of the other ranks' slots it reduces (its share of\n"
      "each, their norm and counter lines, and the train.overlap_comm thread's stack); with\n"
      "an elementwise optimizer the parameters are one window every rank maps.\n\n" +
      config_keys_footer());
  cmd->callback([args] {
    keep_first_of_each(args->options.global_batches);
    run_memory(*args);
  });
}

}  // namespace lbt::cli
