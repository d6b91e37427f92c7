// Ranks agree or stop: before any other collective of a run, every rank compares its resolved
// config (every key but train.threads and the data paths) and world layout with rank 0's, then
// the contents of its data files. Ranks started with different configs (an MPMD launch, a --set
// on one host) would otherwise deadlock (another train.steps: one rank waits forever in an
// allreduce) or train silently wrong (another LR, a stale copy of the data on one host).
#pragma once
#include <cstdint>
#include <string>

#include <vector>

#include "trainer/comm/communicator.hpp"
#include "trainer/data/load.hpp"

namespace lbt::experiments {

struct WorldLayout {
  std::int64_t global_batch = 0, micro_batch = 0, accum_steps = 0;
};

// One allgather of a 64-bit hash when all agree. On a mismatch the texts of the differing
// ranks travel to every rank; rank 0 throws ConfigError naming each differing key with both
// values and the ranks that hold them, the others throw ReportedByRankZero (cli/main.cpp prints
// rank 0's message only, and rank 0's abort ends the job).
void check_ranks_agree(comm::Communicator& comm, const std::string& resolved_toml,
                       const WorldLayout& layout);

// Every rank fingerprints its data files (size and a CRC-32 of every byte; the paths may
// differ) and compares with rank 0's: one allgather when all agree. On a mismatch rank 0 throws
// DataError naming the first differing file with each rank's path and size, the others
// ReportedByRankZero, as above.
void check_data_agrees(comm::Communicator& comm, const std::vector<data::DataFile>& files);

// "KEY SIZE FINGERPRINT" per data file, in `files`' order: what the ranks compare, and what a
// checkpoint records so that a resume on data changed since is refused. DataError where a file
// cannot be read.
std::vector<std::string> data_fingerprints(const std::vector<data::DataFile>& files);

// One such line read back, with the path a checkpoint appends ("" where none).
struct DataPrint {
  std::string key, size, fingerprint, path;
  // A print from before whole-file CRCs (no ":CRC") compares by its sampled part only.
  bool same_contents(const DataPrint& o) const;
};
DataPrint read_data_print(const std::string& line);

// How `now` differs from `then`: "the same size, other contents" or "N bytes then, M bytes now"
// ("none" for a file missing on one side).
std::string data_change(const DataPrint& then, const DataPrint& now);

}  // namespace lbt::experiments
