// Bytes one data-parallel rank holds while it trains (`lbt memory`, `lbt plan`): parameters,
// gradients, optimizer state (as the trainer keeps it: every rank a whole copy; and ZeRO-1's
// share, Rajbhandari et al. 2020, arXiv:1910.02054, stage 1), the two snapshots the target
// bracket keeps, activations and layer workspaces at the micro-batch, the prefetch ring, the
// evaluation buffers, the in-memory dataset and the process's own baseline. Each part counts
// what the trainer allocates (AlignedBuffer's page rounding included), so the total can be
// checked against a real run's peak resident set (`lbt memory --probe`).
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>

#include "nn/model.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/data/load.hpp"

namespace lbt::trainer {

// What the estimate depends on besides the micro-batch; fixed for a config and a layout.
struct MemoryModel {
  const nn::Model* model = nullptr;  // built (its parameters allocated), never run
  std::int64_t num_params = 0;
  int optimizer_buffers = 0;             // flat state buffers of num_params floats (SGD 0, Adam 2)
  std::int64_t layer_buffer_floats = 0;  // BatchNorm running statistics
  std::int64_t data_bytes = 0;           // train + validation + test, resident all run
  std::int64_t load_extra_bytes = 0;  // copies alive beside the data while it is loaded and split
  bool weights_ema = false;           // a target is set: the loop keeps the weights' EMA
  std::int64_t input_dim = 0, target_dim = 0;
  std::int64_t validation_examples = 0;  // this rank's share
  std::int64_t eval_batch = 0;
  int threads = 1, workers = 1;
  std::int64_t runtime_bytes = 0;  // the process before it loads anything (measured)
  // Several ranks on one node (MPI; lbt memory assumes one node): the gradient buffer is this
  // rank's slot of a shared-memory window (trainer/comm/shm_reducer.hpp), and with an
  // elementwise optimizer (no local SGD) the parameters are one window every rank maps (the
  // sharded step, trainer/sharded_step.hpp).
  bool shm_gradients = false, shared_params = false;
  int rank = 0;  // whose share of the reduction it counts (rank 0's, the largest, by default)
  std::int64_t bucket_floats = 0;  // train.overlap_comm: buckets on a reducing thread; else 0
};

// Bytes per rank at one micro-batch.
struct MemoryEstimate {
  std::int64_t micro_batch = 0;
  std::int64_t runtime = 0, data = 0, load_extra = 0;
  std::int64_t parameters = 0, gradients = 0;
  std::int64_t optimizer_state = 0;          // replicated: what lbt's trainer allocates
  std::int64_t optimizer_state_sharded = 0;  // ZeRO-1: the state divided over the ranks
  std::int64_t snapshots = 0;    // parameters + state copied at evaluations (two at once)
  std::int64_t activations = 0;  // outputs and their gradients at max(micro, eval) batch
  std::int64_t workspace = 0, prefetch = 0, evaluation = 0;
  // What several ranks add (0 for one): the pages of the other ranks' gradient slots this
  // rank reduces, their norm and counter lines, and the reducing thread's stack.
  std::int64_t communication = 0;

  // Everything allocated after the data are in memory (replicated or sharded state).
  std::int64_t training(bool sharded = false) const;
  // The peak: the runtime and data, and the larger of the load's extra copy and training.
  std::int64_t total(bool sharded = false) const;
};

// The inputs for `model` (built by the caller for `run` on `splits`): counts the state buffers
// of the optimizer `run` names and the splits' bytes. `threads`: compute threads per rank
// (convolution workspaces are per thread).
MemoryModel memory_model(const RunConfig& run, nn::Model& model, const data::Splits& splits,
                         int workers, int threads, std::int64_t runtime_bytes);

// Throws ConfigError for a micro-batch past largest_countable_micro_batch.
MemoryEstimate estimate_memory(const MemoryModel& m, std::int64_t micro_batch);

// The largest micro-batch whose byte counts stay below 2^62 for this model (a bound, far past
// any memory: about 2^62 / (256 bytes x the floats an example touches)).
std::int64_t largest_countable_micro_batch(const MemoryModel& m);

// The largest micro-batch whose total fits `budget` bytes; 0 when not even 1 does.
std::int64_t largest_micro_batch(const MemoryModel& m, std::int64_t budget, bool sharded);

// "16GiB", "512MB", "1.5TiB", "4096B": a positive number and, with no space, a unit among B,
// KB/KiB, MB/MiB, GB/GiB, TB/TiB, decimal (1000^k) or binary (1024^k), case-insensitive.
// Throws ConfigError naming `option` and the text.
std::int64_t parse_memory_size(const std::string& text, const std::string& option = "--memory");

// "1.50 GiB", "12.0 MiB", "512 B".
std::string format_bytes(std::int64_t bytes);

// This process's resident set now (VmRSS), in bytes; 0 where /proc is not readable.
std::int64_t resident_bytes_now();
// This process's peak resident set so far (getrusage's ru_maxrss), in bytes.
std::int64_t peak_resident_bytes();

// What a memory cgroup leaves new allocations of this process: its limit less its usage, from
// cgroup v2 (memory.max, memory.current) or v1 (memory.limit_in_bytes, memory.usage_in_bytes)
// of the group `proc_self_cgroup` (/proc/self/cgroup's text) names under `cgroup_root`
// (/sys/fs/cgroup), or that root's own files where the group's path is not visible (a
// container's namespace). -1 where no limit is set or nothing is readable.
std::int64_t cgroup_headroom_bytes(const std::filesystem::path& cgroup_root,
                                   const std::string& proc_self_cgroup);
// Bytes this machine lets this process still allocate: the smaller of MemAvailable and the
// cgroup's headroom (a container's limit is not in /proc/meminfo); -1 where neither is known.
std::int64_t available_memory_bytes();

// Bytes of one rank's slot in a shm_reducer.hpp window of n floats: n rounded up to 16 floats,
// three 64-byte lines (norm partial, bucket counters, OpenMPI's header offset), whole pages.
std::int64_t shm_slot_bytes(std::int64_t n);
// Bytes of the other ranks' slots that rank `rank` of `workers` touches in one reduction
// (ShmReducer::range_of's share of each, in pages, and the page of each one's norm partial
// and counters); 0 for one rank.
// bucket_floats > 0: the overlapped reduction, which splits each bucket of that many floats
// among the ranks instead (shm_bucket_reducer.hpp).
std::int64_t shm_peer_bytes(std::int64_t n, int workers, int rank, std::int64_t bucket_floats = 0);

}  // namespace lbt::trainer
