// `lbt fit SWEEP_DIR`: S_min, E_min, B_crit with bootstrap intervals; writes fit.json.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/sweep_fit.hpp"
#include "cli/commands.hpp"
#include "cli/option_checks.hpp"
#include "experiments/sweep/fit_files.hpp"
#include "experiments/sweep/sweep.hpp"

namespace lbt::cli {
namespace {

// " (each in >= 93.1% of the bootstrap's fits)": the least of the regime's batch sizes' shares
// of bootstrap fits that agree (fit.json's regimes.*.agreement); nothing where none is known.
std::string weakest_share_text(const nlohmann::json& regime) {
  double least = 2.0;
  for (const auto& share : regime.value("agreement", nlohmann::json::array()))
    if (share.is_number()) least = std::min(least, share.get<double>());
  if (least > 1.0) return "";
  char text[64];
  std::snprintf(text, sizeof text, " (each in >= %.3g%% of the bootstrap's fits)", 100 * least);
  return text;
}

struct FitArgs {
  std::string dir;
  int resamples = 2000;
  bool no_plots = false;
};
}  // namespace

void add_fit_command(CLI::App& app) {
  auto a = std::make_shared<FitArgs>();
  CLI::App* cmd =
      app.add_subcommand("fit",
                         "Fit S = S_min (1 + B_crit/B) (McCandlish et al. 2018) to a sweep's best "
                         "steps: S_min, E_min = S_min B_crit, B_crit, regimes");
  cmd->add_option("sweep_dir", a->dir, "directory written by lbt sweep")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->add_option("--resamples", a->resamples,
                  "bootstrap resamples (default 2000; at least 40: a 95% percentile interval "
                  "needs a replicate in each 2.5% tail)")
      ->check(whole_number(static_cast<std::int64_t>(analysis::min_resamples(0.95)),
                           analysis::kMaxResamples));
  cmd->add_flag("--no-plots", a->no_plots, "skip notebooks/lbt_sweep_plots.py");
  cmd->callback([a] {
    analysis::FitOptions o;
    o.resamples = a->resamples;
    const auto fit = experiments::fit_sweep(a->dir, o);
    std::printf("%s\n", analysis::format_fit_line(fit).c_str());
    for (const char* name :
         {"perfect_scaling", "diminishing_returns", "maximal_data_parallelism"}) {
      if (!fit["regimes"].is_object()) break;  // null: no critical batch to place them by
      const auto& r = fit["regimes"][name];
      const auto batch = [](const nlohmann::json& b) {  // 16, not 16.0
        char text[32];
        std::snprintf(text, sizeof text, "%.6g", b.get<double>());
        return std::string(text);
      };
      std::string range = r["from"].is_null() ? "(no swept batch size)" : batch(r["from"]);
      if (!r["from"].is_null() && r["to"] != r["from"]) range += " .. " + batch(r["to"]);
      std::printf("  %-25s B %s%s\n", name, range.c_str(), weakest_share_text(r).c_str());
    }
    std::printf("%s", analysis::format_measured_noise(fit).c_str());
    if (!a->no_plots) {
      const std::string warning = experiments::make_sweep_plots(a->dir);
      if (!warning.empty()) std::fprintf(stderr, "warning: %s\n", warning.c_str());
    }
    std::printf("wrote %s/fit.json\n", a->dir.c_str());
  });
}

}  // namespace lbt::cli
