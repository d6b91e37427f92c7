// Backend choice: the only place that knows which transports were compiled in. Also holds the
// process-wide communicator (MPI starts once per process) that cli/main.cpp reaches on error.
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/comm/local_communicator.hpp"
#if defined(LBT_WITH_MPI)
#include "trainer/comm/mpi_communicator.hpp"
#endif

namespace lbt::comm {
namespace {

std::unique_ptr<Communicator>& process_slot() {
  // Destroyed at exit, after main returns: MPI_Finalize runs then.
  static std::unique_ptr<Communicator> slot;
  return slot;
}

}  // namespace

bool launched_by_mpi() {
  for (const char* var :
       {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_NUM_TASKS"}) {
    if (std::getenv(var)) return true;
  }
  return false;
}

std::unique_ptr<Communicator> make_communicator(const CommOptions& options) {
  const std::string backend(options.backend);
  if (backend == "local" || (backend == "auto" && !launched_by_mpi())) {
    return std::make_unique<LocalCommunicator>();
  }
  if (backend == "mpi" || backend == "auto") {
#if defined(LBT_WITH_MPI)
    return std::make_unique<MpiCommunicator>();
#else
    throw ConfigError("this lbt was built without MPI but was launched by mpirun/srun",
                      "rebuild with -DLBT_WITH_MPI=ON (install libopenmpi-dev openmpi-bin)");
#endif
  }
  throw ConfigError("unknown communicator backend '" + backend + "'",
                    "valid backends: auto, local, mpi");
}

Communicator& process_communicator(const CommOptions& options) {
  auto& slot = process_slot();
  if (!slot) {
    slot = make_communicator(options);
    return *slot;
  }
  const std::string wanted(options.backend);
  if (wanted != "auto" && wanted != slot->backend()) {
    throw ConfigError("comm.backend = '" + wanted + "' but this process already runs the '" +
                          slot->backend() + "' communicator",
                      "use one backend per process (comm.backend = auto picks it from the launch)");
  }
  return *slot;
}

Communicator* active_communicator() {
  return process_slot().get();
}

}  // namespace lbt::comm
