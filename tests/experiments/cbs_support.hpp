// Reference runs for lbt cbs's end-to-end tests: synthetic linear regression (y = w*.x + noise;
// trainer/data/synthetic.hpp), whose noise scale B_simple = tr(Sigma) / |G|^2 grows as w
// approaches w* (McCandlish et al. 2018, App. A), trained by the real `lbt train`.
#pragma once
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli_runner.hpp"

namespace lbt::test {

struct CbsReference {
  int steps = 60, batch = 32, micro = 8, checkpoint_every = 20;
  double lr = 0.05, momentum = 0.9;
  std::string scaling = "linear";
  int examples = 4096, dim = 16;
  double noise = 0.5;
  std::string extra;     // more TOML lines for [train]
  std::string schedule;  // more TOML lines for [schedule]
  std::string noise_keys = "every = 5\nestimator = \"two_batch\"\n";  // [noise]
};

// Writes the config and runs `lbt train` into scratch()/name; returns the run directory.
inline std::filesystem::path train_reference(const std::string& name, const CbsReference& r) {
  const auto cfg = scratch() / (name + ".toml");
  std::ofstream(cfg) << "[model]\nspec = \"linear:" << r.dim << "-1\"\ninit = \"zero\"\n"
                     << "[data]\ndataset = \"synthetic-regression\"\nvalidation_size = 1024\n"
                     << "[data.synthetic]\nexamples = " << r.examples << "\ndim = " << r.dim
                     << "\nnoise = " << r.noise << "\n"
                     << "[train]\nglobal_batch = " << r.batch << "\nmicro_batch = " << r.micro
                     << "\nsteps = " << r.steps << "\neval_every = 20\nlog_every = 1\nseed = 3\n"
                     << "threads = 1\ncheckpoint_every = " << r.checkpoint_every
                     << "\ncheckpoint_keep = 1000\n"
                     << r.extra << "[optimizer]\nname = \"sgd\"\nlr = " << r.lr
                     << "\nmomentum = " << r.momentum << "\n[schedule]\nscaling = \"" << r.scaling
                     << "\"\nreference_batch = " << r.batch << "\n"
                     << r.schedule << "[noise]\nenabled = true\n"
                     << r.noise_keys;
  const auto dir = scratch() / name;
  const CliResult res =
      run_lbt("train --config " + cfg.string() + " --out " + dir.string() + " --quiet");
  if (res.code != 0) throw std::runtime_error("reference run failed: " + res.err);
  return dir;
}

// metrics.jsonl's lines by step (the last line of a step wins).
inline std::map<std::int64_t, nlohmann::json> metrics_by_step(const std::filesystem::path& run) {
  std::map<std::int64_t, nlohmann::json> out;
  std::istringstream in(slurp(run / "metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.contains("step") && j.contains("loss"))
      out[j["step"].get<std::int64_t>()] = j;
  }
  return out;
}

inline std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

}  // namespace lbt::test
