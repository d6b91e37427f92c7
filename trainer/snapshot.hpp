// An in-memory copy of everything a training step reads and writes (parameters, optimizer
// state, layer buffers such as BatchNorm's running statistics, random streams, loop state):
// what a checkpoint holds, without the file. Training is deterministic given this state (the
// bit-exact resume), so restoring a snapshot and stepping again replays the run bit for bit;
// the target refinement (loop.cpp) uses it to go back to the last evaluation below the target.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "nn/model.hpp"
#include "optim/optimizer.hpp"

namespace lbt::trainer {

struct ModelSnapshot {
  std::vector<float> params;
  std::vector<std::vector<float>> optimizer_buffers, layer_buffers;
  std::vector<std::string> streams;
};

ModelSnapshot take_snapshot(nn::Model& model, const optim::Optimizer& optimizer);

// write_params false: another process owns the (shared) parameter memory and restores it.
void restore_snapshot(const ModelSnapshot& snapshot, nn::Model& model, optim::Optimizer& optimizer,
                      bool write_params);

}  // namespace lbt::trainer
