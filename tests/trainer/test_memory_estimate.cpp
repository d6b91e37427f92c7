// trainer/memory_estimate: every part of the MLP's estimate counted by hand from the layer
// widths and the allocation rule (64-byte lines; whole 2 MiB pages from 256 KiB), the optimizer
// state per method, the largest micro-batch at its boundary, and --memory strings.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "nn/model.hpp"
#include "trainer/memory_estimate.hpp"

namespace lbt::trainer {
namespace {

constexpr std::int64_t kMiB = std::int64_t{1} << 20;

std::unique_ptr<nn::Model> built_mlp() {
  auto model = nn::Model::from_spec("mlp:784-512-512-10", nn::InitScheme::kHe);
  auto rng = make_rng(1, RngStream::kInit);
  model->build(rng);
  return model;
}

// A classification dataset of n examples of `dim` floats with int32 labels.
data::Dataset examples(std::int64_t n, std::int64_t dim) {
  data::Dataset d;
  d.n = n;
  d.dim = dim;
  d.x.resize(static_cast<std::size_t>(n * dim));
  d.labels.resize(static_cast<std::size_t>(n));
  d.num_classes = 10;
  return d;
}

RunConfig sgd_run(double momentum) {
  RunConfig run;
  run.optimizer.name = "sgd";
  run.optimizer.sgd.momentum = momentum;
  run.train.eval_batch = 1000;
  return run;
}

// Fashion-MNIST's shapes, 50,000 / 10,000 / 10,000 examples of 784 floats.
data::Splits fmnist_like() {
  data::Splits s;
  s.train = examples(50000, 784);
  s.validation = examples(10000, 784);
  s.test = examples(10000, 784);
  return s;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(memory_estimate)

BOOST_AUTO_TEST_CASE(mlp_parts_match_a_count_by_hand) {
  auto model = built_mlp();
  const data::Splits splits = fmnist_like();
  const MemoryModel m = memory_model(sgd_run(0.9), *model, splits, 1, 2, 5 * kMiB);

  const std::int64_t params = 784 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10;  // 669,706
  BOOST_TEST(m.num_params == params);
  BOOST_TEST(m.optimizer_buffers == 1);  // momentum
  // 2,678,824 bytes: past 256 KiB, so two whole 2 MiB pages
  const std::int64_t flat = 4 * kMiB;
  // Outputs per example: 512 (fc1), 512 (ReLU), 512 (fc2), 512 (ReLU), 10 (fc3); and gradients.
  BOOST_TEST(model->activation_floats_per_example() == 2 * (4 * 512 + 10));

  const MemoryEstimate e = estimate_memory(m, 4096);
  BOOST_TEST(e.runtime == 5 * kMiB);
  const std::int64_t split_bytes = 784 * 4 + 4;  // features and label per example
  BOOST_TEST(e.data == 70000 * split_bytes);
  // The validation rows copied out while the file's are alive (the training rows move down in
  // place); under data.train_limit the kept rows are copied first: one more training set.
  BOOST_TEST(e.load_extra == 10000 * split_bytes);
  RunConfig limited = sgd_run(0.9);
  limited.train.data.train_limit = 50000;
  BOOST_TEST(
      estimate_memory(memory_model(limited, *model, splits, 1, 2, 5 * kMiB), 4096).load_extra ==
      60000 * split_bytes);
  BOOST_TEST(e.parameters == flat);
  BOOST_TEST(e.gradients == flat);
  BOOST_TEST(e.optimizer_state == flat);
  BOOST_TEST(e.snapshots == 2 * 4 * 2 * params);  // parameters + momentum, two copies
  // With a target each copy holds the weights' EMA, beside the live one.
  RunConfig targeted = sgd_run(0.9);
  targeted.train.target = parse_target("val_accuracy>=0.9");
  BOOST_TEST(
      estimate_memory(memory_model(targeted, *model, splits, 1, 2, 5 * kMiB), 4096).snapshots ==
      2 * 4 * 2 * params + 3 * 4 * params);
  // 4096 x 512 floats = 8 MiB exactly (4 such outputs, and gradients); 4096 x 10 floats =
  // 160 KiB, under 256 KiB: 64-byte lines
  BOOST_TEST(e.activations == 2 * (4 * 8 * kMiB + 4096 * 10 * 4));
  BOOST_TEST(e.workspace == 0);  // the panel path's scratch is for batches up to 64
  // 3 batches of x (4096 x 784 floats = 12.25 MiB -> 14 MiB), labels, one target float each
  // (16 KiB), and 8-byte indices
  BOOST_TEST(e.prefetch == 3 * (14 * kMiB + 4096 * 4 + 4096 * 4) + 4096 * 8);
  // 1000 x 784 floats = 3,136,000 bytes -> 4 MiB; 1000 labels; 1000 target floats
  BOOST_TEST(e.evaluation == 4 * kMiB + 4000 + 4032);
  const std::int64_t training = 3 * flat + e.snapshots + e.activations + e.prefetch + e.evaluation;
  BOOST_TEST(e.training() == training);
  BOOST_TEST(e.total() == 5 * kMiB + e.data + std::max(e.load_extra, training));
}

BOOST_AUTO_TEST_CASE(small_batches_count_the_evaluation_width_and_panel_scratch) {
  auto model = built_mlp();
  const MemoryModel m = memory_model(sgd_run(0.9), *model, fmnist_like(), 1, 2, 0);
  const MemoryEstimate e = estimate_memory(m, 64);
  // Activations are held at the evaluation batch, 1000: 1000 x 512 floats = 2,048,000 bytes
  // -> 2 MiB; 1000 x 10 floats = 40,000 bytes -> 40,000 (64-byte multiple)
  BOOST_TEST(e.activations == 2 * (4 * 2 * kMiB + 40000));
  // Linear(784->512): x^T 784 x 64 and y^T 512 x 64 floats; Linear(512->512): 512 x 64 twice;
  // Linear(512->10) has fewer than 32 outputs and takes the GEMM path.
  BOOST_TEST(e.workspace == 4 * (784 * 64 + 512 * 64) + 4 * (2 * 512 * 64));
}

BOOST_AUTO_TEST_CASE(optimizer_state_buffers_per_method) {
  auto model = built_mlp();
  const data::Splits splits = fmnist_like();
  auto buffers = [&](const std::string& name, double momentum) {
    RunConfig run = sgd_run(momentum);
    run.optimizer.name = name;
    run.optimizer.lars.momentum = momentum;
    return memory_model(run, *model, splits, 1, 1, 0).optimizer_buffers;
  };
  BOOST_TEST(buffers("sgd", 0.0) == 0);
  BOOST_TEST(buffers("sgd", 0.9) == 1);
  BOOST_TEST(buffers("nesterov", 0.9) == 1);
  BOOST_TEST(buffers("adam", 0.9) == 2);
  BOOST_TEST(buffers("adamw", 0.9) == 2);
  BOOST_TEST(buffers("lamb", 0.9) == 2);
  BOOST_TEST(buffers("lars", 0.9) == 1);
  BOOST_TEST(buffers("larc", 0.9) == 1);  // its base: SGD with momentum
}

BOOST_AUTO_TEST_CASE(zero1_divides_the_state_over_the_ranks) {
  auto model = built_mlp();
  RunConfig run = sgd_run(0.9);
  run.optimizer.name = "adam";
  const MemoryModel m = memory_model(run, *model, fmnist_like(), 8, 1, 0);
  const MemoryEstimate e = estimate_memory(m, 128);
  BOOST_TEST(e.optimizer_state == 2 * 4 * kMiB);
  // ceil(669,706 / 8) = 83,714 floats = 334,856 bytes -> one 2 MiB page each for m and v
  BOOST_TEST(e.optimizer_state_sharded == 2 * 2 * kMiB);
  BOOST_TEST(e.training(true) == e.training(false) - 4 * kMiB);
}

BOOST_AUTO_TEST_CASE(several_ranks_count_the_shared_memory_windows_by_hand) {
  auto model = built_mlp();
  const std::int64_t params = 669706;
  // A slot: 669,712 floats (16-float multiple) = 2,678,848 bytes + 3 lines of 64 = 2,679,040
  // bytes -> 655 pages of 4 KiB (the window is not on huge pages) = 2,682,880 bytes.
  const std::int64_t slot = 655 * 4096;
  BOOST_TEST(shm_slot_bytes(params) == slot);
  // np 2: rank 0's share ceil(669,706 / 2) = 334,853 -> 334,864 floats = 1,339,456 bytes ->
  // 328 pages, one more where it straddles a page, one for the peer's norm and counter lines.
  BOOST_TEST(shm_peer_bytes(params, 2, 0) == (328 + 2) * 4096);
  // Rank 1 has what is left: 334,842 floats = 1,339,368 bytes -> 327 pages (+2).
  BOOST_TEST(shm_peer_bytes(params, 2, 1) == (327 + 2) * 4096);
  // np 4: 167,427 -> 167,440 floats = 669,760 bytes -> 164 pages (+2), from each of 3 peers.
  BOOST_TEST(shm_peer_bytes(params, 4, 0) == 3 * (164 + 2) * 4096);
  BOOST_TEST(shm_peer_bytes(params, 1, 0) == 0);
  // Overlapped, buckets of 262,144 floats (1 MiB): shares 131,072, 131,072 and 72,720 floats
  // (145,418 / 2 = 72,709 -> 72,720) = 128 + 128 + 72 pages (290,880 bytes -> 72), each a
  // page more for straddling, and the lines' page.
  BOOST_TEST(shm_peer_bytes(params, 2, 0, 262144) == (129 + 129 + 73 + 1) * 4096);

  // SGD with momentum is elementwise: on 2 ranks both parameters and gradients are window
  // slots; the communication part is rank 0's share of its peer.
  MemoryModel m = memory_model(sgd_run(0.9), *model, fmnist_like(), 2, 1, 0);
  BOOST_TEST(m.shm_gradients);
  BOOST_TEST(m.shared_params);
  const MemoryEstimate two = estimate_memory(m, 256);
  BOOST_TEST(two.parameters == slot);
  BOOST_TEST(two.gradients == slot);
  BOOST_TEST(two.optimizer_state == 4 * kMiB);  // every rank keeps (and zeroes) a whole copy
  BOOST_TEST(two.communication == 330 * 4096);
  m.rank = 1;
  BOOST_TEST(estimate_memory(m, 256).communication == 329 * 4096);
  // LARS is not elementwise: the parameters stay the rank's own (2 whole 2 MiB pages).
  RunConfig lars = sgd_run(0.9);
  lars.optimizer.name = "lars";
  lars.optimizer.lars.momentum = 0.9;
  const MemoryModel ml = memory_model(lars, *model, fmnist_like(), 2, 1, 0);
  BOOST_TEST(!ml.shared_params);
  BOOST_TEST(estimate_memory(ml, 256).parameters == 4 * kMiB);
  BOOST_TEST(estimate_memory(ml, 256).gradients == slot);
  // One rank: no windows, nothing communicated.
  const MemoryEstimate one =
      estimate_memory(memory_model(sgd_run(0.9), *model, fmnist_like(), 1, 1, 0), 256);
  BOOST_TEST(one.communication == 0);
  BOOST_TEST(one.parameters == 4 * kMiB);
}

BOOST_AUTO_TEST_CASE(largest_micro_batch_is_the_last_that_fits) {
  auto model = built_mlp();
  const MemoryModel m = memory_model(sgd_run(0.9), *model, fmnist_like(), 1, 2, 10 * kMiB);
  const std::int64_t budget = std::int64_t{2} << 30;
  const std::int64_t b = largest_micro_batch(m, budget, false);
  BOOST_TEST(b > 1000);
  BOOST_TEST(estimate_memory(m, b).total() <= budget);
  BOOST_TEST(estimate_memory(m, b + 1).total() > budget);
  BOOST_TEST(largest_micro_batch(m, 100 * kMiB, false) == 0);  // less than the data alone
}

BOOST_AUTO_TEST_CASE(memory_strings_parse_decimal_and_binary_units) {
  BOOST_TEST(parse_memory_size("16GiB") == std::int64_t{16} << 30);
  BOOST_TEST(parse_memory_size("16gib") == std::int64_t{16} << 30);
  BOOST_TEST(parse_memory_size("80GB") == std::int64_t{80'000'000'000});
  BOOST_TEST(parse_memory_size("512MB") == 512'000'000);
  BOOST_TEST(parse_memory_size("512mib") == 512 * kMiB);
  BOOST_TEST(parse_memory_size("1.5TiB") == std::int64_t{3} << 39);
  BOOST_TEST(parse_memory_size("2TB") == std::int64_t{2'000'000'000'000});
  BOOST_TEST(parse_memory_size("1KB") == 1000);
  BOOST_TEST(parse_memory_size("1KiB") == 1024);
  BOOST_TEST(parse_memory_size("4096B") == 4096);
}

BOOST_AUTO_TEST_CASE(memory_strings_without_number_or_unit_are_config_errors) {
  for (const std::string bad :
       {"16 Gb", "16", "GiB", "16GiBs", "1.2.3GB", "", "16Gib ", "1e3MB", "-GiB"}) {
    BOOST_TEST_CONTEXT("'" << bad << "'") {
      try {
        parse_memory_size(bad);
        BOOST_ERROR("accepted");
      } catch (const ConfigError& e) {
        BOOST_TEST(std::string(e.what()) ==
                   "--memory '" + bad + "': expected a number and a unit such as 16GiB, 512MB");
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(memory_sizes_of_zero_or_less_say_the_memory_must_be_positive) {
  for (const std::string bad : {"0GiB", "-1GiB", "0.0001B", "-16MB", "9999999999TiB"}) {
    BOOST_TEST_CONTEXT("'" << bad << "'") {
      try {
        parse_memory_size(bad);
        BOOST_ERROR("accepted");
      } catch (const ConfigError& e) {
        BOOST_TEST(std::string(e.what()).rfind(
                       "--memory '" + bad + "': the memory must be positive", 0) == 0);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(bytes_print_in_binary_units) {
  BOOST_TEST(format_bytes(512) == "512 B");
  BOOST_TEST(format_bytes(3 * kMiB / 2) == "1.50 MiB");
  BOOST_TEST(format_bytes(std::int64_t{80} << 30) == "80.00 GiB");
}

// A container's memory limit is not in /proc/meminfo: the cgroup's headroom, read from a
// hand-made cgroup tree (v2, v1 beside a v2 root line, a path the namespace hides, no limit).
BOOST_AUTO_TEST_CASE(cgroup_headroom_is_the_limit_less_the_usage_of_the_named_group) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("lbt_cgroup_" + std::to_string(::getpid()));
  // A group directory's limit and usage files (v2 names, or v1's).
  auto group = [&](const fs::path& dir, bool v2, const std::string& limit,
                   const std::string& usage) {
    fs::create_directories(root / dir);
    std::ofstream(root / dir / (v2 ? "memory.max" : "memory.limit_in_bytes")) << limit << "\n";
    std::ofstream(root / dir / (v2 ? "memory.current" : "memory.usage_in_bytes")) << usage << "\n";
  };
  group("v2/user.slice/job", true, "1000000", "250000");
  BOOST_TEST(cgroup_headroom_bytes(root / "v2", "0::/user.slice/job\n") == 750000);
  group("v2max/job", true, "max", "250000");
  BOOST_TEST(cgroup_headroom_bytes(root / "v2max", "0::/job\n") == -1);
  // v1, its memory line after a v2 root line whose files are absent
  group("v1/memory/api/abc", false, "2000000", "500000");
  const std::string hybrid = "0::/\n5:devices:/\n4:cpu,memory:/api/abc\n";
  BOOST_TEST(cgroup_headroom_bytes(root / "v1", hybrid) == 1500000);
  // the group's path not visible inside the container: the root's own files
  group("ns/memory", false, "3000000", "3500000");
  BOOST_TEST(cgroup_headroom_bytes(root / "ns", "4:memory:/hidden/path\n") == 0);
  // v1's "no limit"
  group("none/memory", false, "9223372036854771712", "500000");
  BOOST_TEST(cgroup_headroom_bytes(root / "none", "4:memory:/\n") == -1);
  BOOST_TEST(cgroup_headroom_bytes(root / "absent", "0::/x\n4:memory:/x\n") == -1);
  fs::remove_all(root);
  // This machine's answer: a positive number, or unknown.
  const std::int64_t available = available_memory_bytes();
  BOOST_TEST((available == -1 || available > 0));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace lbt::trainer
