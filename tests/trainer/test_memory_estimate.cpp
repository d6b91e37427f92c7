// trainer/memory_estimate: every part of the MLP's estimate counted by hand from the layer
// widths and the allocation rule (64-byte lines; whole 2 MiB pages from 256 KiB), the optimizer
// state per method, the largest micro-batch at its boundary, and --memory strings.
#include <boost/test/unit_test.hpp>

#include <cstdint>
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
  BOOST_TEST(e.load_extra == 60000 * split_bytes);
  BOOST_TEST(e.parameters == flat);
  BOOST_TEST(e.gradients == flat);
  BOOST_TEST(e.optimizer_state == flat);
  BOOST_TEST(e.snapshots == 2 * 4 * 2 * params);  // parameters + momentum, two copies
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
       {"16 Gb", "16", "GiB", "-1GiB", "0GiB", "16GiBs", "1.2.3GB", "", "16Gib ", "1e3MB"}) {
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

BOOST_AUTO_TEST_CASE(bytes_print_in_binary_units) {
  BOOST_TEST(format_bytes(512) == "512 B");
  BOOST_TEST(format_bytes(3 * kMiB / 2) == "1.50 MiB");
  BOOST_TEST(format_bytes(std::int64_t{80} << 30) == "80.00 GiB");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace lbt::trainer
