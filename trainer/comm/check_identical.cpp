// check_identical: every rank hashes its bytes (FNV-1a, 64-bit), the two 32-bit halves travel
// as exact doubles, and one allreduce of (h, -h) with max tells whether max == min everywhere.
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "trainer/comm/communicator.hpp"

namespace lbt::comm {

void check_identical(Communicator& comm, std::span<const std::byte> data, std::string_view what) {
  if (comm.size() == 1) return;
  std::uint64_t hash = 14695981039346656037ull;
  for (std::byte b : data) {
    hash ^= static_cast<std::uint64_t>(b);
    hash *= 1099511628211ull;
  }
  const double lo = static_cast<double>(hash & 0xffffffffu), hi = static_cast<double>(hash >> 32);
  const double size = static_cast<double>(data.size());
  double v[6] = {lo, hi, size, -lo, -hi, -size};  // max of -x is -min of x
  comm.allreduce(std::span<double>(v, 6), ReduceOp::kMax);
  if (v[0] != -v[3] || v[1] != -v[4] || v[2] != -v[5]) {
    throw CommError(std::string(what) + " differ across ranks (rank " +
                        std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) +
                        " sees a different hash or size)",
                    "all ranks must start from the same state; check that every rank built the "
                    "same model (model.spec) and that the broadcast from rank 0 ran");
  }
}

}  // namespace lbt::comm
