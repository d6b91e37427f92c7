// Local SGD's keys, sync points and parameter average; see local_sgd.hpp.
#include "trainer/local_sgd.hpp"

#include <algorithm>
#include <string>

#include "trainer/config/train_keys.hpp"

namespace lbt::trainer {

std::int64_t LocalSgdOptions::sync_point_at_or_after(std::int64_t steps,
                                                     std::int64_t total_steps) const {
  if (in_sync_after(steps, total_steps)) return steps;
  return std::min(total_steps, (steps / sync_every + 1) * sync_every);
}

LocalSgdOptions read_local_sgd(Config& c, std::int64_t checkpoint_every) {
  LocalSgdOptions l;
  l.sync_every = c.get_int(train_key("train.sync_every"));
  l.post_local_after = c.get_int(train_key("train.post_local_after"));
  if (l.sync_every < 1) {
    c.fail("train.sync_every", ">= 1 (1: synchronous data parallel)", std::to_string(l.sync_every),
           "e.g. --set train.sync_every=4 to average parameters every 4 steps");
  }
  if (l.post_local_after < 0)
    c.fail("train.post_local_after", ">= 0", std::to_string(l.post_local_after));
  // Checkpoints are written where every rank holds the same state (rank 0 writes for all).
  if (l.enabled() && checkpoint_every % l.sync_every != 0) {
    c.fail("train.checkpoint_every",
           "a multiple of train.sync_every = " + std::to_string(l.sync_every) +
               " (checkpoints are written at parameter averages)",
           std::to_string(checkpoint_every),
           "e.g. train.checkpoint_every=" + std::to_string(l.sync_every * 100));
  }
  return l;
}

void average_over_ranks(std::span<float> params, optim::Optimizer& optimizer,
                        std::span<float> scratch, comm::Communicator& comm) {
  auto average = [&](std::span<float> buffer) {
    std::copy(buffer.begin(), buffer.end(), scratch.begin());
    comm.allreduce_sq_norm(scratch, comm::ReduceOp::kAvg);
    std::copy(scratch.begin(), scratch.end(), buffer.begin());
  };
  average(params);  // x = (1/K) sum_k x_k (Lin et al. Alg. 1)
  // State of other shapes (step counters) is the same on every rank already.
  for (auto& [name, buffer] : optimizer.state().buffers())
    if (buffer.size() == params.size()) average(buffer.span());
}

}  // namespace lbt::trainer
