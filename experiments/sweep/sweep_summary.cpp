// summarise_sweep and make_sweep_plots; see sweep_summary.hpp and sweep.hpp.
#include "experiments/sweep/sweep_summary.hpp"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "analysis/sweep_fit.hpp"
#include "experiments/plots.hpp"
#include "experiments/sweep/fit_files.hpp"
#include "experiments/sweep/sweep_adaptive.hpp"
#include "trainer/config/train_config.hpp"

namespace lbt::experiments {

void summarise_sweep(const std::filesystem::path& dir, const std::vector<TrialResult>& results,
                     const std::string& target, int trial_index, bool plots, SweepOutcome& out) {
  for (const auto& r : results) {
    out.reached += r.status == "reached_target";
    const bool failed = r.status == "failed" || r.status == "timeout";
    out.failed += failed;
    if (failed && (trial_index < 0 || r.trial.index == trial_index))
      out.failed_trials.push_back(r.trial.name + ": " + r.message);
  }
  if (trial_index >= 0) return;
  for (const std::string& w : target_noise_warnings(results, trainer::parse_target(target)))
    std::fprintf(stderr, "[sweep] warning: %s\n", w.c_str());
  std::string why_skipped;
  const nlohmann::json fit = refit_sweep(dir, why_skipped);  // null when skipped
  out.fit_note = fit.is_null() ? "skipped: " + why_skipped : analysis::format_fit_line(fit);
  if (const std::string noise = fit.is_null() ? "" : analysis::format_measured_noise(fit);
      !noise.empty())
    out.fit_note += "\n" + noise.substr(0, noise.size() - 1);  // printed "fit: NOTE\n"
  // sweep.adaptive: the adaptive trials against the fit (adaptive.json).
  if (const nlohmann::json a = write_adaptive_json(dir, results, fit); !a.is_null())
    out.adaptive_table = format_adaptive_table(a);
  if (plots) {
    const std::string warning = make_sweep_plots(dir);
    if (!warning.empty()) std::fprintf(stderr, "[sweep] warning: %s\n", warning.c_str());
  }
}

std::string make_sweep_plots(const std::filesystem::path& sweep_dir) {
  const std::filesystem::path log = sweep_dir / "plots.log";
  std::error_code ec;
  std::filesystem::remove(log, ec);  // this run's output only
  if (ec) {  // a directory of that name holding files: the plots are not made, one line says so
    return "plots skipped: " + log.string() + " cannot be replaced (" + ec.message() +
           "); move it away to make them";
  }
  // The plots went through a plots/ that is a link, over the files it points to (2026-11-30).
  if (std::filesystem::is_symlink(sweep_dir / "plots", ec))
    return "plots skipped: " + (sweep_dir / "plots").string() +
           " is a symbolic link, which lbt does not write through; replace it with a directory";
  return run_plot_script("lbt_sweep_plots.py", {sweep_dir.string()}, log);
}

}  // namespace lbt::experiments
