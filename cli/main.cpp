// The `lbt` executable: subcommands over experiments/ and trainer/. The only place that
// catches lbt::Error: prints "error: ..." and "hint: ...", exits non-zero. Under MPI with more
// than one rank it names the rank and aborts the whole job, so no other rank waits forever in
// a collective for the one that failed.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

#include "cli/commands.hpp"
#include "core/error.hpp"
#include "experiments/lbt_schema.hpp"
#include "trainer/comm/communicator.hpp"

namespace lbt::cli {

std::ostream* notes_stream() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* rank = std::getenv(var); rank && std::string(rank) != "0") return nullptr;
  }
  return &std::cerr;
}

std::string config_keys_footer() { return experiments::lbt_schema().help(); }

}  // namespace lbt::cli

namespace {

int report_failure(int code, const std::string& what, const std::string& hint) {
  lbt::comm::Communicator* comm = lbt::comm::active_communicator();
  const bool many_ranks = comm && comm->size() > 1;
  const std::string where =
      many_ranks ? "rank " + std::to_string(comm->rank()) + " of " + std::to_string(comm->size()) + ": " : "";
  std::fprintf(stderr, "error: %s%s\n", where.c_str(), what.c_str());
  if (!hint.empty()) std::fprintf(stderr, "hint: %s\n", hint.c_str());
  if (many_ranks) comm->abort(code, "stopping all ranks after the error above");
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "lbt: large-batch training research toolkit.\n"
      "Batch-size sweeps, gradient noise scale, LR schedules and large-batch optimizers."};
  app.set_version_flag("--version", "lbt 0.1.0");
  app.require_subcommand(1);
  app.fallthrough();
  lbt::cli::add_train_command(app);
  lbt::cli::add_schedule_command(app);
  lbt::cli::add_sweep_command(app);
  lbt::cli::add_fit_command(app);
  lbt::cli::add_scaling_command(app);
  lbt::cli::add_noise_command(app);
  lbt::cli::add_plan_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const lbt::Error& e) {
    return report_failure(e.exit_code(), e.what(), e.hint());
  } catch (const std::exception& e) {
    return report_failure(1, e.what(), "");
  }
  return 0;
}
