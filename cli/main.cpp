// The `lbt` executable: subcommands over experiments/ and trainer/. The only place that
// catches lbt::Error: prints "error: ..." and "hint: ...", exits non-zero. Under MPI with more
// than one rank it names the rank and aborts the whole job, so no other rank waits forever in
// a collective for the one that failed.
#include <malloc.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "core/cpu_path.hpp"
#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/kernel_choice.hpp"
#include "experiments/lbt_schema.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/interrupt.hpp"

namespace lbt::cli {

std::ostream* notes_stream() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (const char* rank = std::getenv(var); rank && std::string(rank) != "0") return nullptr;
  }
  return &std::cerr;
}

void note_sweep_sets(const std::vector<std::string>& sets, const char* command) {
  std::ostream* notes = notes_stream();
  if (!notes) return;
  for (const std::string& set : sets) {
    if (!set.starts_with("sweep.")) continue;
    *notes << "note: --set " << set.substr(0, set.find('=')) << " has no effect on lbt " << command
           << ": only lbt sweep reads sweep.* keys\n";
  }
}

std::string config_keys_footer() {
  return experiments::lbt_schema().help();
}

}  // namespace lbt::cli

namespace {

int report_failure(int code, const std::string& what, const std::string& hint) {
  lbt::comm::Communicator* comm = lbt::comm::active_communicator();
  const bool many_ranks = comm && comm->size() > 1;
  const std::string where = many_ranks ? "rank " + std::to_string(comm->rank()) + " of " +
                                             std::to_string(comm->size()) + ": "
                                       : "";
  std::fprintf(stderr, "error: %s%s\n", where.c_str(), what.c_str());
  if (!hint.empty()) std::fprintf(stderr, "hint: %s\n", hint.c_str());
  if (many_ranks) {
    lbt::trainer::restore_default_interrupts();  // mpirun's SIGTERM as it ends the job
    comm->abort(code, "stopping all ranks after the error above");
  }
  return code;
}

// A config error comes from the config and the launch every rank shares, so rank 0 meets the
// same one: the other ranks give it 3 seconds to print it and end the job (every rank printed
// it, each followed by mpirun's SIGTERM read as an interrupt), and speak only where it did not.
// Rank 0 waits half a second first, so that the others have met the error and taken back their
// interrupt handlers when mpirun's SIGTERM comes (one that lagged printed "stopping after this
// step" under CI's load, 2026-11-30).
int report_config_failure(const lbt::ConfigError& e) {
  lbt::comm::Communicator* comm = lbt::comm::active_communicator();
  if (comm && comm->size() > 1) {
    lbt::trainer::restore_default_interrupts();  // mpirun's SIGTERM as it ends the job
    std::this_thread::sleep_for(comm->rank() == 0 ? std::chrono::milliseconds(500)
                                                  : std::chrono::milliseconds(3000));
  }
  return report_failure(e.exit_code(), e.what(), e.hint());
}

const char* const kExitCodes =
    "Exit codes:\n"
    "  0    done; for lbt sweep: every trial ended as reached_target, budget_exhausted,\n"
    "       diverged or completed (diverging is an outcome, not an error)\n"
    "  1    other error\n"
    "  2    bad config or option; a directory in use (a sweep directory locked by another\n"
    "       lbt sweep) or holding something else (--overwrite, --resume); for lbt sweep,\n"
    "       a trial refused for what every trial shares (no usable GPU): the sweep stops;\n"
    "       lbt doctor, or model.device=cuda, on a machine with no usable GPU\n"
    "  3    bad or missing data file; MPI ranks whose data files differ in content\n"
    "  4    device error\n"
    "  5    communication error (MPI)\n"
    "  6    lbt sweep ran to its end but some trials failed (crashed or timed out); they\n"
    "       are listed\n"
    "  130  interrupted by SIGINT (Ctrl-C), 143 by SIGTERM: lbt train finished its step,\n"
    "       wrote a checkpoint and summary status \"interrupted\" (--resume continues it);\n"
    "       lbt sweep passed the signal to its running trials (each saves itself so),\n"
    "       waited for them and wrote sweep.csv/best.csv (rerunning continues it);\n"
    "       a second signal exits at once, keeping the last complete checkpoints";

// --version's GEMM line: the library and what chose it. It read "gemm onednn (LBT_GEMM=openblas:
// OpenBLAS)", as if the variable were set.
std::string gemm_line() {
  // OpenBLAS picks its kernels by CPUID, whatever LBT_CPU says (OPENBLAS_CORETYPE chooses).
  const std::string core = lbt::gemm_core();
  const std::string backend = lbt::gemm_backend() + (core.empty() ? "" : " " + core + " kernels");
  if (backend == "onednn") return "gemm onednn (LBT_GEMM=openblas runs OpenBLAS instead)";
  if (std::getenv("LBT_GEMM") && lbt::kernel_choice(lbt::KernelChoice::kGemm) == "openblas")
    return "gemm " + backend + " (set by LBT_GEMM=openblas)";
  return "gemm " + backend + " (oneDNN's GEMM runs on the AVX-512 path of a build with oneDNN)";
}

}  // namespace

int lbt::cli::run_lbt(int argc, char** argv) {
  // A fixed threshold: every allocation of 1 MiB or more is its own mapping, returned to the
  // kernel when freed. glibc's default raises the threshold to the size of each large block
  // freed, so the buffers an evaluation batch outgrows (the model's activations at the
  // micro-batch) stayed resident beside their replacements: ResNet-8's peak at micro-batch
  // 128 was 7.6% above `lbt memory`'s estimate and 0.3% with this line.
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  CLI::App app{
      "lbt: large-batch training research toolkit.\n"
      "Batch-size sweeps, gradient noise scale, LR schedules and large-batch optimizers."};
  // The version, which copy of the CPU kernels runs here and why (core/cpu_path.hpp), and which
  // library multiplies the large matrices (core/gemm.cpp).
  app.set_version_flag("--version",
                       [] { return "lbt 0.1.0\n" + lbt::cpu_path_report() + "\n" + gemm_line(); });
  app.footer(kExitCodes);
  app.require_subcommand(1);
  app.fallthrough();
  lbt::cli::add_train_command(app);
  lbt::cli::add_schedule_command(app);
  lbt::cli::add_sweep_command(app);
  lbt::cli::add_fit_command(app);
  lbt::cli::add_scaling_command(app);
  lbt::cli::add_noise_command(app);
  lbt::cli::add_plan_command(app);
  lbt::cli::add_memory_command(app);
  lbt::cli::add_doctor_command(app);
  lbt::cli::add_cbs_command(app);
  // Each command's --help says them too (a command with a footer of its own, such as train's
  // config keys, had replaced the list it inherits).
  for (CLI::App* sub : app.get_subcommands({})) {
    const std::string own = sub->get_footer();
    if (own.find("Exit codes:") == std::string::npos)
      sub->footer(own.empty() ? kExitCodes : own + "\n\n" + kExitCodes);
  }
  try {
    lbt::check_kernel_choices();  // LBT_GEMM=openbals must not quietly benchmark oneDNN twice
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return lbt::cli::report_parse_error(app, e);
  } catch (const lbt::ReportedByRankZero& e) {
    // Rank 0 prints the message and aborts the job; wait for that rather than racing it.
    lbt::comm::Communicator* comm = lbt::comm::active_communicator();
    if (!comm || comm->size() == 1) return report_failure(e.exit_code(), e.what(), e.hint());
    lbt::trainer::restore_default_interrupts();  // mpirun's SIGTERM as it ends the job
    std::this_thread::sleep_for(std::chrono::seconds(10));
    comm->abort(e.exit_code(), "rank 0 did not end the job");
  } catch (const lbt::Interrupted& e) {
    // Not a failure of one rank: every rank stopped after the same step and saved it, so no
    // abort; rank 0 speaks for all.
    const lbt::comm::Communicator* comm = lbt::comm::active_communicator();
    if (!comm || comm->rank() == 0) {
      std::fprintf(stderr, "%s\nhint: %s\n", e.what(), e.hint().c_str());
    }
    return e.exit_code();
  } catch (const lbt::ConfigError& e) {
    return report_config_failure(e);
  } catch (const lbt::Error& e) {
    return report_failure(e.exit_code(), e.what(), e.hint());
  } catch (const std::exception& e) {
    return report_failure(1, e.what(), "");
  }
  return 0;
}
