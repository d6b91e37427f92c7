// Backend choice: the only place that knows which transports were compiled in.
#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/comm/local_communicator.hpp"

namespace lbt::comm {

bool launched_by_mpi() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "SLURM_STEP_NUM_TASKS"}) {
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
    throw ConfigError("this lbt was built without MPI but was launched by mpirun/srun",
                      "rebuild with -DLBT_WITH_MPI=ON (install libopenmpi-dev openmpi-bin)");
  }
  throw ConfigError("unknown communicator backend '" + backend + "'",
                    "valid backends: auto, local, mpi");
}

}  // namespace lbt::comm
