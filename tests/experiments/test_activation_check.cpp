// What `lbt train --check` and a sweep's --check refuse before anything is allocated
// (experiments/run_check.hpp, check_activations): a batch whose activations fit the machine but
// whose activations and layer workspaces together do not. ResNet-20 at batch 16384 passed with
// 34 GiB to find on a 23.5 GiB machine, its workspaces twice its activations (2026-11-30 audit).
#include <boost/test/unit_test.hpp>

#include <string>

#include "core/error.hpp"
#include "core/sizes.hpp"
#include "experiments/run_check.hpp"
#include "nn/model.hpp"
#include "trainer/config/train_config.hpp"

namespace {

// The model's layer outputs and their gradients at `batch`, in bytes, summed here.
std::int64_t activation_bytes(const lbt::nn::Model& model, std::int64_t batch) {
  std::int64_t bytes = 0;
  for (const auto& layer : model.layers()) bytes += batch * layer->out_features() * 8;
  return bytes;
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_batch_whose_activations_and_workspaces_pass_the_machine_is_refused) {
  const auto model = lbt::nn::Model::from_spec("resnet:20", lbt::nn::InitScheme::kHe, {1, 28, 28});
  lbt::trainer::TrainConfig cfg;
  cfg.threads = 2;
  cfg.eval_batch = 1;
  const std::int64_t memory = lbt::machine_memory_bytes();
  const auto both = [&](std::int64_t batch) {
    return activation_bytes(*model, batch) + model->workspace_bytes(batch, 2);
  };
  // The first batch whose activations and workspaces pass the machine (both grow with it).
  std::int64_t lo = 1, hi = std::int64_t{1} << 26;
  while (hi - lo > 1) (both((lo + hi) / 2) > memory ? hi : lo) = (lo + hi) / 2;
  cfg.micro_batch = hi;
  // The activations alone fit (the check before this one).
  BOOST_REQUIRE(activation_bytes(*model, cfg.micro_batch) < memory);
  BOOST_REQUIRE(activation_bytes(*model, cfg.micro_batch) +
                    model->workspace_bytes(cfg.micro_batch, 2) >
                memory);
  BOOST_CHECK_EXCEPTION(lbt::experiments::check_activations(cfg, *model, 0, 1), lbt::ConfigError,
                        [](const lbt::ConfigError& e) {
                          return std::string(e.what()).find("layers' workspaces") !=
                                     std::string::npos &&
                                 std::string(e.hint()).find("lbt memory") != std::string::npos;
                        });
  cfg.micro_batch = lo;  // the largest within: passes
  BOOST_CHECK_NO_THROW(lbt::experiments::check_activations(cfg, *model, 0, 1));
}
