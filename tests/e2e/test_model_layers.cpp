// Models through the real `lbt` binary, on a slice of Fashion-MNIST: bias-free layers (spec
// suffix :nobias) train and feed both noise estimators; a [[model.layers]] list trains bit for
// bit as its spec string does; bad lists end in exit 2 with one line naming the layer.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"
#include "trainer/checkpoint.hpp"

namespace fs = std::filesystem;
using lbt::test::error_line;
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

// `preset` with its model.spec line replaced by `layers` ([[model.layers]] tables), as a file.
fs::path layers_config(const std::string& preset, const std::string& layers,
                       const std::string& name) {
  std::string text = slurp(kConfigs + preset);
  const auto spec = text.find("spec = ");
  text.erase(spec, text.find('\n', spec) - spec);
  const fs::path path = scratch() / (name + ".toml");
  std::ofstream(path) << text << "\n" << layers;
  return path;
}

std::string linear(int out, bool bias) {
  return "[[model.layers]]\ntype = \"linear\"\nout = " + std::to_string(out) +
         (bias ? "" : "\nbias = false") + "\n";
}
const std::string kRelu = "[[model.layers]]\ntype = \"relu\"\n";
std::string conv(int out) {
  return "[[model.layers]]\ntype = \"conv\"\nout_channels = " + std::to_string(out) +
         "\nkernel = 5\npadding = 2\n";
}
const std::string kPool = "[[model.layers]]\ntype = \"pool\"\nkernel = 2\n";

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

BOOST_AUTO_TEST_CASE(layer_lists_train_bit_for_bit_as_their_spec_strings) {
  struct Case {
    std::string preset, spec, layers;
    int steps;
  };
  const Case cases[] = {
      {"fmnist_mlp.toml", "mlp:784-64-10", linear(64, true) + kRelu + linear(10, true), 30},
      {"fmnist_mlp.toml", "mlp:784-64-10:nobias", linear(64, false) + kRelu + linear(10, false),
       30},
      {"fmnist_cnn.toml", "cnn:simple",
       conv(32) + kRelu + kPool + conv(64) + kRelu + kPool + linear(1024, true) + kRelu +
           linear(10, true),
       12},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.spec) {
      const std::string sets = " --set train.steps=" + std::to_string(c.steps) +
                               " --set train.eval_every=" + std::to_string(c.steps) +
                               " --set schedule.warmup=0" + kShort;
      const fs::path by_spec = scratch() / ("spec_" + c.spec),
                     by_list = scratch() / ("list_" + c.spec);
      const auto a = run_lbt("train --config " + kConfigs + c.preset +
                             " --set model.spec=" + c.spec + sets + " --out " + by_spec.string());
      const auto b =
          run_lbt("train --config " + layers_config(c.preset, c.layers, "list_" + c.spec).string() +
                  sets + " --out " + by_list.string());
      BOOST_REQUIRE_MESSAGE(a.code == 0 && b.code == 0, a.err + b.err);
      const auto ma = read_jsonl(by_spec / "metrics.jsonl"),
                 mb = read_jsonl(by_list / "metrics.jsonl");
      BOOST_REQUIRE(ma.size() == static_cast<std::size_t>(c.steps));
      BOOST_REQUIRE(ma.size() == mb.size());
      for (std::size_t i = 0; i < ma.size(); ++i) {
        // Bit for bit: the same doubles (JSON prints them round-trip exact).
        BOOST_TEST(ma[i]["loss"].get<double>() == mb[i]["loss"].get<double>(), "step " << i);
        BOOST_TEST(ma[i]["grad_norm"].get<double>() == mb[i]["grad_norm"].get<double>());
      }
      const auto sa = nlohmann::json::parse(slurp(by_spec / "summary.json"));
      const auto sb = nlohmann::json::parse(slurp(by_list / "summary.json"));
      BOOST_TEST(sa["final_val_loss"].get<double>() == sb["final_val_loss"].get<double>());
      BOOST_TEST(sa["model"] == sb["model"]);
    }
  }
}

BOOST_AUTO_TEST_CASE(bad_layer_lists_exit_2_with_one_line_naming_the_layer) {
  struct Case {
    std::string name, layers, extra, want1, want2;
  };
  const Case cases[] = {
      {"type", kRelu + "[[model.layers]]\ntype = \"convolution\"\n", "",
       "model.layers[1]: unknown layer type 'convolution'", ""},
      {"field", linear(10, true) + "bias_init = 0.1\n", "",
       "model.layers[0] (linear): unknown field 'bias_init'", ""},
      {"both", linear(10, true), " --set model.spec=linear:784-10",
       "model.spec and model.layers are both set", ""},
      {"shape", linear(10, true) + conv(4), "",
       "model.layers[1] (conv): takes images [C, H, W], but layer 0 gives 10 flat features", ""},
      {"pool", conv(4) + "[[model.layers]]\ntype = \"pool\"\nkernel = 29\n", "",
       "model.layers[1] (pool): MaxPool2d(k29 s29) does not fit its input [4, 28, 28]",
       "layer 0 gives images [4, 28, 28]"},
  };
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.name) {
      const fs::path out = scratch() / ("bad_" + c.name);
      const auto r = run_lbt("train --config " +
                             layers_config("fmnist_mlp.toml", c.layers, "bad_" + c.name).string() +
                             c.extra + " --set train.steps=5" + kShort + " --out " + out.string());
      BOOST_TEST(r.code == 2, r.err);
      const std::string line = error_line(r.err);
      BOOST_TEST(line.find(c.want1) != std::string::npos, r.err);
      BOOST_TEST(line.find(c.want2) != std::string::npos, r.err);
      BOOST_TEST(r.err.find("hint: ") != std::string::npos, r.err);
      BOOST_TEST(!fs::exists(out / "summary.json"));
    }
  }
}

BOOST_AUTO_TEST_CASE(resuming_with_changed_layers_is_refused_naming_the_layer) {
  const std::string sets = " --set train.steps=6 --set schedule.warmup=0" + kShort;
  const std::string resume = sets.substr(0, sets.rfind(" --overwrite")) + " --resume auto";
  const fs::path out = scratch() / "resume_layers";
  const auto first = run_lbt(
      "train --config " +
      layers_config("fmnist_mlp.toml", linear(64, true) + kRelu + linear(10, true), "resume_a")
          .string() +
      sets + " --out " + out.string());
  BOOST_REQUIRE_MESSAGE(first.code == 0, first.err);
  // The same list with one more layer: a count the checkpoint's config does not have.
  const auto grown =
      run_lbt("train --config " +
              layers_config("fmnist_mlp.toml",
                            linear(64, true) + kRelu + linear(64, true) + kRelu + linear(10, true),
                            "resume_b")
                  .string() +
              resume + " --out " + out.string());
  BOOST_TEST(grown.code == 2, grown.err);
  BOOST_TEST(error_line(grown.err).find("model.layers.length: 3 -> 5") != std::string::npos,
             grown.err);
  // One field changed.
  const auto changed = run_lbt(
      "train --config " +
      layers_config("fmnist_mlp.toml", linear(32, true) + kRelu + linear(10, true), "resume_c")
          .string() +
      resume + " --out " + out.string());
  BOOST_TEST(changed.code == 2, changed.err);
  BOOST_TEST(error_line(changed.err).find("model.layers[0].out: 64 -> 32") != std::string::npos,
             changed.err);
}

// docs/training.md's `--set model.layers='[...]'` works over a preset: the command line's list
// replaces the file's model.spec (every preset has one, and the override was refused on each);
// both given on the command line stay an error.
BOOST_AUTO_TEST_CASE(a_layer_list_set_on_the_command_line_replaces_the_files_spec) {
  const std::string preset = "train --check --config " + kConfigs + "fmnist_mlp.toml";
  const auto r = run_lbt(preset + " --set 'model.layers=[{type = \"linear\", out = 10}]'");
  BOOST_TEST(r.code == 0, r.err);
  BOOST_TEST(r.out.find("layers = [ { out = 10, type = 'linear' } ]") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("spec = ") == std::string::npos, r.out);
  const auto both = run_lbt(preset + " --set 'model.layers=[{type = \"linear\", out = 10}]'" +
                            " --set model.spec=mlp:784-10");
  BOOST_TEST(both.code == 2);
  BOOST_TEST(error_line(both.err).find("model.spec and model.layers are both set") !=
             std::string::npos);
}

// A step that diverges or is skipped leaves BatchNorm's running statistics as they were: the
// final checkpoint of a run that diverges at its second step holds exactly the statistics of a
// run stopped after its first (it held them advanced by the diverging batch's forward, a mean
// of 17 where 0.12: 2026-11-29 audit), and so does that of a run whose later steps were skipped.
BOOST_AUTO_TEST_CASE(a_diverging_or_skipped_step_leaves_batchnorm_statistics_as_they_were) {
  const fs::path cfg = layers_config(
      "fmnist_cnn.toml",
      conv(4) + "[[model.layers]]\ntype = \"batchnorm\"\n" + kRelu + kPool + linear(10, true),
      "batchnorm_spike");
  // lr 1000: the first update throws the weights far out, every later loss is a spike.
  const auto train = [&](const std::string& name, const std::string& sets) {
    const fs::path dir = scratch() / name;
    const auto r = run_lbt("train --config " + cfg.string() + kShort +
                           " --set optimizer.momentum=0 --set optimizer.lr=1000"
                           " --set train.divergence_factor=2 --set train.checkpoint_every=1 " +
                           sets + " --out " + dir.string());
    BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
    return dir;
  };
  const auto last_buffers = [](const fs::path& dir) {
    const auto ck =
        lbt::trainer::read_checkpoint(lbt::trainer::list_checkpoints(dir / "checkpoints").back());
    std::vector<std::vector<std::byte>> buffers;
    for (const auto& [name, bytes] : ck.sections)
      if (name.rfind("layer_buffer/", 0) == 0) buffers.push_back(bytes);
    return buffers;
  };
  const auto one = last_buffers(train("bn_one_step", "--set train.steps=1"));
  BOOST_REQUIRE_EQUAL(one.size(), 2u);  // running mean and variance
  const fs::path diverged = train("bn_diverged", "--set train.steps=4");
  const auto d = nlohmann::json::parse(slurp(diverged / "summary.json"));
  BOOST_REQUIRE_EQUAL(d["status"], "diverged");
  BOOST_REQUIRE_EQUAL(d["diverged_step"], 1);
  BOOST_TEST((last_buffers(diverged) == one));
  const fs::path skipped = train(
      "bn_skipped", "--set train.steps=4 --set train.on_divergence=skip --set train.skip_limit=9");
  BOOST_REQUIRE_EQUAL(nlohmann::json::parse(slurp(skipped / "summary.json"))["skipped_steps"], 3);
  BOOST_TEST((last_buffers(skipped) == one));
}

// A diverged run's final checkpoint, resumed because the run was killed before its summary was
// written (a sweep's trial under the soak test's kills), wrote a summary without the step and the
// reason it diverged: the checkpoint keeps both (2026-11-30).
BOOST_AUTO_TEST_CASE(a_diverged_runs_final_checkpoint_keeps_why) {
  const fs::path run = scratch() / "diverged_why";
  const std::string train = "train --config " + kConfigs + "fmnist_mlp.toml" + kShort +
                            " --set optimizer.lr=1000 --set train.divergence_factor=2"
                            " --set train.steps=4 --set train.checkpoint_every=1 --out " +
                            run.string();
  auto r = run_lbt(train);
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto whole = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_REQUIRE(whole["status"] == "diverged");
  std::ofstream(run / "summary.json", std::ios::trunc) << R"({"status": "running"})";
  r = run_lbt("train --quiet --resume " + run.string());
  BOOST_REQUIRE_MESSAGE(r.code == 0, r.err);
  const auto resumed = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_TEST(resumed["status"] == "diverged");
  BOOST_TEST(resumed["diverged_step"] == whole["diverged_step"]);
  BOOST_TEST(resumed["divergence_reason"] == whole["divergence_reason"]);
}
