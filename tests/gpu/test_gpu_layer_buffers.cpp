// BatchNorm's running statistics on the GPU after a step that diverges or is skipped: as they
// were before its forward passes, as on the CPU (tests/e2e/test_model_layers.cpp's case). The
// suite's skip for a machine without a GPU or the data is test_gpu_training.cpp's.
#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpu_runs.hpp"
#include "support/cli_runner.hpp"
#include "trainer/checkpoint.hpp"

namespace fs = std::filesystem;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

namespace {

// ResNet-8 on the GPU at lr 1000: the first update throws the weights far out and every later
// loss is a spike (on the CPU: diverged at step 1, or 3 steps skipped). A checkpoint per step.
fs::path train_resnet(const std::string& name, const std::string& sets) {
  const fs::path dir = scratch() / name;
  const auto r = run_lbt(
      std::string("train --config ") + LBT_SOURCE_DIR +
      "/experiments/configs/fmnist_cnn.toml --quiet --overwrite --set data.path=" +
      lbt::test::fmnist_dir() +
      " --set model.spec=resnet:8 --set model.device=cuda --set data.train_limit=2000"
      " --set data.validation_size=500 --set train.eval_every=1000 --set train.eval_batch=500"
      " --set train.log_every=1 --set train.global_batch=32 --set schedule.warmup=0"
      " --set optimizer.momentum=0 --set optimizer.lr=1000 --set train.divergence_factor=2"
      " --set train.checkpoint_every=1 " +
      sets + " --out " + dir.string());
  BOOST_TEST_REQUIRE(r.code == 0, r.err);
  return dir;
}

// The layer buffers (running means and variances) of the run's newest checkpoint, as bytes.
std::vector<std::vector<std::byte>> last_layer_buffers(const fs::path& run) {
  const auto ck =
      lbt::trainer::read_checkpoint(lbt::trainer::list_checkpoints(run / "checkpoints").back());
  std::vector<std::vector<std::byte>> buffers;
  for (const auto& [name, bytes] : ck.sections)
    if (name.rfind("layer_buffer/", 0) == 0) buffers.push_back(bytes);
  return buffers;
}

}  // namespace

// Until 2026-11-29 the GPU's running statistics saw a skipped spike's batch, and a diverged
// run's final checkpoint held them one forward ahead of its parameters. Written 2026-11-29; not
// yet run on a GPU.
BOOST_AUTO_TEST_CASE(a_diverging_or_skipped_gpu_step_leaves_batchnorm_statistics_as_they_were) {
  const auto one = last_layer_buffers(train_resnet("gpu_bn_one_step", "--set train.steps=1"));
  BOOST_TEST_REQUIRE(one.size() >= 2u);  // a mean and a variance per BatchNorm
  const fs::path diverged = train_resnet("gpu_bn_diverged", "--set train.steps=4");
  const auto d = nlohmann::json::parse(slurp(diverged / "summary.json"));
  BOOST_TEST_REQUIRE(d["status"] == "diverged");
  BOOST_TEST_REQUIRE(d["diverged_step"] == 1);
  BOOST_TEST((last_layer_buffers(diverged) == one));
  const fs::path skipped = train_resnet("gpu_bn_skipped",
                                        "--set train.steps=4 --set train.on_divergence=skip --set "
                                        "train.skip_limit=9");
  BOOST_TEST_REQUIRE(nlohmann::json::parse(slurp(skipped / "summary.json"))["skipped_steps"] == 3);
  BOOST_TEST((last_layer_buffers(skipped) == one));
}
