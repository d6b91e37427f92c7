// node_ranks: the launcher's variables, checked before they are believed.
#include "trainer/comm/node_ranks.hpp"

#include <cstdlib>
#include <optional>

namespace lbt::comm {

std::optional<int> int_from_env(const char* name, long low, long high) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < low || v > high) return std::nullopt;
  return static_cast<int>(v);
}

namespace {

std::optional<NodeRanks> from_env(const char* rank_name, const char* size_name, int size) {
  const std::optional<int> local_size = int_from_env(size_name, 1, size);
  if (!local_size) return std::nullopt;
  const std::optional<int> local_rank = int_from_env(rank_name, 0, *local_size - 1);
  if (!local_rank) return std::nullopt;
  return NodeRanks{*local_rank, *local_size};
}

}  // namespace

NodeRanks node_ranks(int rank, int size) {
  if (auto n = from_env("OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", size))
    return *n;
  if (auto n = from_env("MPI_LOCALRANKID", "MPI_LOCALNRANKS", size)) return *n;
  return {rank, size};
}

}  // namespace lbt::comm
