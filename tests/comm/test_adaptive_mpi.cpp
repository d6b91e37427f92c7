// Adaptive batch size under mpirun (trainer/adaptive_batch.hpp): every rank chooses the same
// batch after every step (each rank's own loop state, seen through RunOptions::after_checkpoint),
// that batch is the rule's applied to the EMA B_simple rank 0 logged (noise.jsonl), clipped and
// rounded to the layout's step of ranks x micro_batch, and a run resumed from the checkpoint
// written right after a change ends bit for bit where the uninterrupted run ends.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "experiments/train_run.hpp"
#include "mpi_runs.hpp"
#include "run_files.hpp"
#include "trainer/checkpoint.hpp"

using namespace lbt;
namespace fs = std::filesystem;
using test::world;

namespace {

constexpr std::int64_t kMicro = 8, kMin = 16, kMax = 512;

// The synthetic regression (B_simple ~ 38 at w = 0, growing as w approaches w*) with the batch
// moving in steps of ranks x 8 examples.
Config adaptive_run(const std::string& extra = "") {
  Config c =
      Config::from_file(fs::path(LBT_SOURCE_DIR) / "experiments/configs/synthetic_regression.toml");
  for (const char* s :
       {"train.batch_schedule=adaptive", "train.micro_batch=8", "train.batch_min=16",
        "train.batch_max=512", "train.steps=300", "optimizer.lr=0.02", "noise.every=1",
        "noise.ema=0.9", "noise.window_steps=20", "noise.estimator=per_example",
        "train.log_every=1", "train.threads=1", "train.eval_every=40", "train.checkpoint_every=1",
        "train.checkpoint_keep=100000", "train.checkpoint_every_seconds=0"})
    c.set(s);
  if (!extra.empty()) c.set(extra);
  return c;
}

struct Trace {
  std::vector<std::int64_t> accum;  // index s - 1: the accumulation chosen after s steps
  std::vector<float> params;
};

Trace train(Config c, const fs::path& out, experiments::Resume resume) {
  Trace t;
  experiments::RunOptions o{out, resume == experiments::Resume::kNo, false, resume};
  o.after_checkpoint = [&](const trainer::LoopState& s) {
    t.accum.resize(static_cast<std::size_t>(s.step));
    t.accum.back() = s.batch_accum;
  };
  t.params = experiments::run_training(c, o, world()).final_params;
  return t;
}

// True on every rank when every rank's `v` equals rank 0's.
bool same_on_every_rank(std::vector<std::int64_t> v) {
  double n = static_cast<double>(v.size());
  world().broadcast(std::as_writable_bytes(std::span(&n, 1)), 0);
  std::vector<std::int64_t> root(static_cast<std::size_t>(n));
  if (world().rank() == 0) root = v;
  world().broadcast(std::as_writable_bytes(std::span(root)), 0);
  double differs = root == v ? 0.0 : 1.0;
  world().allreduce(std::span(&differs, 1), comm::ReduceOp::kSum);
  return differs == 0.0;
}

std::map<std::int64_t, std::int64_t> batches_by_step(const fs::path& run) {
  std::map<std::int64_t, std::int64_t> out;
  for (const auto& m : test::read_jsonl(run / "metrics.jsonl")) out[m["step"]] = m["global_batch"];
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(every_rank_chooses_the_rules_batch_from_the_logged_noise) {
  const int ranks = world().size();
  const std::int64_t step = ranks * kMicro;
  const fs::path run = test::shared_scratch("lbt-test-adaptive-mpi", "rule");
  const Trace t = train(adaptive_run(), run, experiments::Resume::kNo);
  BOOST_TEST_REQUIRE(t.accum.size() > 20u);
  BOOST_TEST(same_on_every_rank(t.accum));
  // Rank 0's logs; every rank reads them (one shared directory).
  const auto batches = batches_by_step(run);
  for (std::size_t s = 1; s < t.accum.size(); ++s)
    BOOST_TEST(batches.at(static_cast<std::int64_t>(s) + 1) == t.accum[s - 1] * step, "step " << s);
  int changes = 0;
  for (const auto& n : test::read_jsonl(run / "noise.jsonl")) {
    if (!n.contains("b_simple_ema") || n["b_simple_ema"].is_null()) continue;
    const std::int64_t i = n["step"];  // report after step index i sets step i + 2's batch
    if (!batches.count(i + 2)) continue;
    const double before = static_cast<double>(batches.at(i + 1));
    const double rule = std::clamp(n["b_simple_ema"].get<double>(), double(kMin), double(kMax));
    const double nearest = std::clamp(std::round(rule / step) * step, double(kMin), double(kMax));
    const double half = 0.5 * static_cast<double>(step);  // the hysteresis: 10% + half a step
    const double expected = std::abs(rule - before) > 0.1 * before + half ? nearest : before;
    BOOST_TEST(batches.at(i + 2) == expected, "report at step " << i << ": rule " << rule);
    changes += expected != before;
  }
  BOOST_TEST(changes >= 2);
  world().barrier();
}

BOOST_AUTO_TEST_CASE(resume_right_after_a_change_is_bit_exact_on_every_rank) {
  auto& comm = world();
  const fs::path base = test::shared_scratch("lbt-test-adaptive-mpi", "resume");
  const Trace whole = train(adaptive_run(), base / "whole", experiments::Resume::kNo);
  // The first step count c >= 10 after which the batch changes: checkpoint c holds the new
  // accumulation, no step taken with it yet.
  std::int64_t change = -1;
  for (std::size_t s = 10; s < whole.accum.size() && change < 0; ++s)
    if (whole.accum[s] != whole.accum[s - 1]) change = static_cast<std::int64_t>(s) + 1;
  BOOST_TEST_REQUIRE(change > 0);
  if (comm.rank() == 0) {
    fs::copy(base / "whole", base / "resumed", fs::copy_options::recursive);
    for (const auto& e : fs::directory_iterator(base / "resumed" / "checkpoints")) {
      const std::string name = e.path().filename().string();
      if (name.rfind("step_", 0) == 0 && std::stoll(name.substr(5)) > change) fs::remove(e.path());
    }
  }
  comm.barrier();
  const Trace resumed = train(adaptive_run(), base / "resumed", experiments::Resume::kRequired);
  BOOST_TEST(resumed.params == whole.params);
  BOOST_TEST(same_on_every_rank(resumed.accum));
  const auto a = batches_by_step(base / "whole"), b = batches_by_step(base / "resumed");
  BOOST_TEST((a == b));
  comm.barrier();  // every rank is done reading: the last case removes the suite's runs
  if (comm.rank() == 0) fs::remove_all(base.parent_path());
}
