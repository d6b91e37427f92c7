// train.overlap_comm under mpirun: the gradient allreduce in buckets started during backward
// (trainer/comm/shm_bucket_reducer.hpp) against the non-overlapped reduction, the oracle: the
// same parameters, losses and gradient norms bit for bit after every step, for buckets from
// one 64-byte line to the whole buffer, with gradient accumulation and with conv/BatchNorm
// layers; bad settings are refused on every rank, and by the command line with exit 2.
#include <boost/test/data/test_case.hpp>
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_runner.hpp"
#include "core/config.hpp"
#include "core/error.hpp"
#include "experiments/train_run.hpp"
#include "mpi_runs.hpp"
#include "run_files.hpp"
#include "trainer/comm/communicator.hpp"

using namespace lbt;
namespace fs = std::filesystem;

namespace {

using test::world;

using test::kGlobalBatch;  // divisible by 2 and 4 ranks, and by accum 2 and 4

// The shared small MLP run (small_mpi_run.hpp) with momentum, 12 steps, every step logged.
Config small_run(const std::string& extra) {
  Config c = test::small_mpi_run("sgd");
  for (const char* item : {"optimizer.momentum=0.9", "train.steps=12", "train.eval_every=12",
                           "train.log_every=1", "train.seed=5", "train.checkpoint_every_seconds=0"})
    c.set(item);
  std::stringstream sets(extra);
  for (std::string item; sets >> item;) c.set(item);
  return c;
}

fs::path scratch(const std::string& name) {
  return test::shared_scratch("lbt-test-overlap", name);
}

experiments::RunResult train(const std::string& sets, const std::string& name) {
  Config c = small_run(sets);
  return experiments::run_training(c, {scratch(name), /*overwrite=*/true, /*progress=*/false},
                                   world());
}

// Every logged step's loss and gradient norm, in that order (rank 0 writes metrics.jsonl).
std::vector<double> losses_and_norms(const fs::path& run_dir) {
  std::vector<double> out;
  for (const auto& line : test::read_jsonl(run_dir / "metrics.jsonl")) {
    out.push_back(line["loss"].get<double>());
    out.push_back(line["grad_norm"].get<double>());
  }
  return out;
}

struct Case {
  std::string model;
  double bucket_mb;
  int accum;
  int steps;
};
std::ostream& operator<<(std::ostream& out, const Case& c) {
  return out << c.model << " bucket_mb=" << c.bucket_mb << " accum=" << c.accum;
}
// 6.103515625e-05 MiB is one 64-byte line: a bucket per 16 floats, boundaries inside tensors.
// 1 MiB holds the whole MLP (one bucket, posted by the first layer's backward). ResNet-8 has
// conv/BatchNorm pairs, whose fused backward the hook must follow.
const std::vector<Case> kCases = {{"mlp:784-32-10", 6.103515625e-05, 1, 12},
                                  {"mlp:784-32-10", 0.01, 2, 12},
                                  {"mlp:784-32-10", 1.0, 1, 12},
                                  {"mlp:784-32-10", 0.03, 4, 12},
                                  {"resnet:8", 0.002, 2, 4}};

}  // namespace

BOOST_DATA_TEST_CASE(overlap_matches_the_non_overlapped_reduction_bit_for_bit,
                     boost::unit_test::data::make(kCases), c) {
  auto& comm = world();
  const std::string layout =
      "model.spec=" + c.model + " train.steps=" + std::to_string(c.steps) +
      " train.eval_every=" + std::to_string(c.steps) +
      " train.micro_batch=" + std::to_string(kGlobalBatch / comm.size() / c.accum);
  const auto oracle = train(layout, "oracle");
  std::ostringstream bucket;
  bucket << " train.overlap_comm=true train.bucket_mb=" << c.bucket_mb;
  const auto overlapped = train(layout + bucket.str(), "overlap");
  BOOST_TEST(overlapped.outcome.steps == c.steps);
  std::size_t bad = 0;  // a miss prints the first indices
  for (std::size_t i = 0; i < oracle.final_params.size(); ++i)
    if (overlapped.final_params[i] != oracle.final_params[i] && bad++ < 5)
      BOOST_ERROR("param " << i << ": " << overlapped.final_params[i] << " vs "
                           << oracle.final_params[i]);
  BOOST_TEST(bad == 0u);
  BOOST_TEST(overlapped.outcome.final_val_loss == oracle.outcome.final_val_loss);
  if (comm.rank() == 0) {
    const auto want = losses_and_norms(oracle.run_dir);
    const auto got = losses_and_norms(overlapped.run_dir);
    BOOST_TEST(got.size() == 2u * static_cast<std::size_t>(c.steps));
    BOOST_TEST(got == want, boost::test_tools::per_element());
  }
  comm::check_identical(comm, std::as_bytes(std::span(overlapped.final_params)), "parameters");
  comm.barrier();
}

BOOST_AUTO_TEST_CASE(bad_overlap_settings_are_refused_on_every_rank) {
  auto& comm = world();
  const std::string layout = "train.micro_batch=" + std::to_string(kGlobalBatch / comm.size());
  auto refused = [&](const std::string& sets, const std::string& says) {
    test::expect_config_error([&] { train(layout + " train.overlap_comm=true " + sets, "bad"); },
                              says, sets);
  };
  refused("train.bucket_mb=1e-05", "segment alignment, 64 bytes");
  refused("train.bucket_mb=0", "segment alignment, 64 bytes");
  refused("noise.enabled=true", "false with the noise scale");
  comm.barrier();  // every rank got here: nobody was left in a collective
  if (comm.rank() == 0) {
    // The command line: exit 2 and the one error line (with its hint line).
    const test::CliResult r = test::run_lbt(
        "train --config " LBT_SOURCE_DIR
        "/experiments/configs/fmnist_mlp.toml --set "
        "comm.backend=local --set train.overlap_comm=true --set train.bucket_mb=1e-05 --out " +
        scratch("cli").string());
    BOOST_TEST(r.code == 2);
    BOOST_TEST(r.err.find("train.bucket_mb must be at least one tensor's segment alignment") !=
                   std::string::npos,
               r.err);
    fs::remove_all(scratch(""));
  }
}
