// Models through the real `lbt` binary: bias-free layers (spec suffix :nobias) train and feed
// both noise estimators, on a slice of Fashion-MNIST.
#define BOOST_TEST_MODULE model_layers
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"

namespace fs = std::filesystem;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

namespace {

const std::string kConfigs = std::string(LBT_SOURCE_DIR) + "/experiments/configs/";
// A few logged steps on a slice of the data; no evaluation in between.
const std::string kShort =
    " --set data.train_limit=2000 --set data.validation_size=500 --set train.eval_every=1000"
    " --set train.eval_batch=500 --set train.log_every=1 --set train.global_batch=64"
    " --quiet --overwrite";

std::vector<nlohmann::json> read_jsonl(const fs::path& p) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace

BOOST_AUTO_TEST_CASE(zero_initialised_bias_free_logistic_regression_starts_at_log_10_and_learns) {
  // All weights 0 and no bias: every logit is 0, so the first loss is ln 10 whatever the data.
  const fs::path out = scratch() / "linear_nobias";
  const auto r = run_lbt("train --config " + kConfigs + "fmnist_mlp.toml" +
                         " --set model.spec=linear:784-10:nobias --set model.init=\\\"zero\\\"" +
                         " --set train.steps=30" + kShort + " --out " + out.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto metrics = read_jsonl(out / "metrics.jsonl");
  BOOST_REQUIRE(metrics.size() >= 10u);
  BOOST_TEST(metrics.front()["loss"].get<double>() == std::log(10.0),
             boost::test_tools::tolerance(1e-6));
  BOOST_TEST(metrics.back()["loss"].get<double>() < 0.8 * std::log(10.0));
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  BOOST_TEST(summary["model"].get<std::string>() == "Linear(784->10, no bias)");
}

BOOST_AUTO_TEST_CASE(both_noise_estimators_run_on_a_bias_free_model) {
  // two_batch's small batches are the micro-batches of a step: 4 of 16.
  for (const std::string estimator : {"per_example", "two_batch"}) {
    BOOST_TEST_CONTEXT(estimator) {
      const std::string layout = estimator == "two_batch" ? " --set train.accum_steps=4" : "";
      const fs::path out = scratch() / ("noise_" + estimator);
      const auto r =
          run_lbt("noise --config " + kConfigs + "fmnist_mlp.toml --steps 12" +
                  " --set model.spec=mlp:784-64-10:nobias" + " --set noise.estimator=\\\"" +
                  estimator + "\\\"" + layout + " --set noise.every=2 --set noise.window_steps=6" +
                  " --set noise.hessian.enabled=false --set schedule.warmup=0" + " --no-plot" +
                  kShort + " --out " + out.string());
      BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
      BOOST_TEST(r.out.find("Method: " + estimator) != std::string::npos, r.out);
      int measured = 0;
      for (const auto& j : read_jsonl(out / "noise.jsonl")) {
        if (!j.contains("estimator") || j["estimator"] != estimator) continue;
        ++measured;
        BOOST_TEST((j["b_simple"].is_null() || std::isfinite(j["b_simple"].get<double>())));
        if (j["G_sq"].is_number()) BOOST_TEST(std::isfinite(j["G_sq"].get<double>()));
      }
      BOOST_TEST(measured >= 3);
    }
  }
}

BOOST_AUTO_TEST_CASE(bias_free_simple_cnn_trains_a_few_steps) {
  const fs::path out = scratch() / "cnn_nobias";
  const auto r = run_lbt("train --config " + kConfigs + "fmnist_cnn.toml" +
                         " --set model.spec=cnn:simple:nobias --set train.steps=8" + kShort +
                         " --out " + out.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto metrics = read_jsonl(out / "metrics.jsonl");
  BOOST_REQUIRE(metrics.size() == 8u);
  for (const auto& m : metrics) BOOST_TEST(std::isfinite(m["loss"].get<double>()));
  BOOST_TEST(metrics.back()["loss"].get<double>() < metrics.front()["loss"].get<double>());
  const auto summary = nlohmann::json::parse(slurp(out / "summary.json"));
  const std::string model = summary["model"];
  BOOST_TEST(model.find("bias)") != std::string::npos, model);
  BOOST_TEST(model.find("Linear(1024->10, no bias)") != std::string::npos, model);
}
