// A run branched from another run's checkpoint (train.branch_from; lbt cbs, Merrill et al. 2025,
// arXiv:2505.23971 Sec. 3): the branch starts from the reference's parameters, optimizer state
// and layer buffers at step S, and its LR continues the reference's schedule at the same data
// position, rescaled by schedule.scaling from the reference's batch B to the branch's k x B.
//
// Why the loop's step starts at S for every k: at k = 1 the branch is then the reference's own
// continuation bit for bit (the same data blocks, the same schedule steps, Adam's bias
// correction at the same count), which tests/experiments/test_cbs_branch_e2e.cpp checks. At k > 1
// the branch's data position within an epoch differs from the reference's; with another
// train.order_seed (lbt cbs's other seeds) every position is an equally fresh draw.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "nn/model.hpp"
#include "optim/optimizer.hpp"
#include "schedules/schedule.hpp"
#include "trainer/config/train_config.hpp"
#include "trainer/loop.hpp"

namespace lbt::experiments {

// What the branch needs of its own run: its train.* and schedule.scaling.
struct BranchOptions {
  std::filesystem::path checkpoint;  // train.branch_from
  std::int64_t global_batch = 0;     // k x B
  std::string scaling;               // schedule.scaling of the branch (none | linear | sqrt)
  int world_size = 1;
  std::int64_t train_examples = 0;  // the training split's size (the reference's budget)
  // A branch measures no noise scale: the estimator's EMAs would start from the reference's,
  // taken at another batch layout. Refused with a ConfigError naming the fix.
  bool noise_enabled = false;
  std::vector<std::string> data;  // the branch's data files (RunIdentity::data): the reference's
};

// The reference point: its step S, its global batch B and the multiplier k = global_batch / B.
// Throws ConfigError when the checkpoint is unreadable, or k is not a whole number >= 1.
struct BranchPoint {
  std::int64_t step = 0, reference_batch = 0, multiplier = 1;
  std::string config;  // the checkpoint's resolved config (its run's config.toml)
};
BranchPoint read_branch_point(const BranchOptions& options);

// lr(s) = scaling(k B / B) x lr_ref(S + (s - S) k) for the branch's loop step s >= S: the
// reference's schedule (built from the checkpoint's own resolved config, at its own budget)
// evaluated where the reference would have seen the same number of examples.
schedules::Schedule branch_schedule(const BranchOptions& options);

// Copies the checkpoint's parameters, optimizer state, layer buffers and random streams into
// the branch's model and optimizer and returns the loop state to start from: step S, its
// divergence state, a fresh outcome (no target, no metrics yet). Only a fresh branch calls it;
// a resumed one continues from its own checkpoint.
trainer::LoopState start_branch(const BranchOptions& options, nn::Model& model,
                                optim::Optimizer& optimizer);

}  // namespace lbt::experiments
