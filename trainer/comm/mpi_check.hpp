// LBT_MPI_CHECK(expr): the one place where MPI status codes become lbt::CommError, naming the
// call, file, line, this process's rank and MPI's own error string (flashlight ncclCheck style).
// Communicators built on MPI (MpiCommunicator, the NCCL id bootstrap) set MPI_ERRORS_RETURN so
// that failures reach this check instead of MPI's default abort.
#pragma once
#include <mpi.h>

namespace lbt::comm::detail {

// Throws CommError; `expr` is the call's source text.
[[noreturn]] void throw_mpi_error(int code, const char* expr, const char* file, int line);

}  // namespace lbt::comm::detail

#define LBT_MPI_CHECK(expr)                                                             \
  do {                                                                                  \
    const int lbt_mpi_status_ = (expr);                                                 \
    if (lbt_mpi_status_ != MPI_SUCCESS) {                                               \
      ::lbt::comm::detail::throw_mpi_error(lbt_mpi_status_, #expr, __FILE__, __LINE__); \
    }                                                                                   \
  } while (0)
