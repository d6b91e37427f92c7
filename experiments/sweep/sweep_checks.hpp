// What `lbt sweep` checks before it runs any trial: --set keys it sets itself (refused), every
// trial's config and schedule (resolved as `lbt train` will), and a rerun's plan against the one
// recorded in sweep.json (the same experiment, or --extend).
#pragma once
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.hpp"
#include "experiments/sweep/sweep.hpp"
#include "experiments/sweep/sweep_plan.hpp"
#include "experiments/sweep/sweep_results.hpp"

namespace lbt::experiments {

// Throws ConfigError for a --set of a key the sweep sets per trial, naming what to use instead.
void refuse_trial_keys(const std::vector<std::string>& sets);

// The trials' config: the sweep's file without its [sweep] table, as TOML text.
std::string trial_base_config(const std::filesystem::path& config_path);

// Checks what every trial's run checks before its first step (run_check.hpp), at each batch size
// of the plan: the trial's config resolved, the model's layer shapes on the data, the optimizer,
// the micro-batch layout and the schedule against the trial's budget. Stops with Interrupted
// (exit 130/143) on the sweep's first SIGINT/SIGTERM, between batch sizes. Returns the
// fingerprints of the data files the trials train on (rank_agreement.hpp), for sweep.json.
std::vector<std::string> validate_trial_configs(const Config& sweep_config,
                                                const std::vector<Trial>& plan);

// The plan's trials as recorded in sweep.json.
nlohmann::json plan_json(const std::vector<Trial>& plan);

// The --set options the trials get: all but the sweep.* ones, which shape the plan and are
// compared as such (batch sizes, trials, search, seeds), so --extend can add seeds by --set.
std::vector<std::string> trial_sets(const std::vector<std::string>& sets);

// sweep.json: what decides the plan, which a rerun must match (check_same_plan), and the
// fingerprints of the data its trials train on (a rerun on data changed since would mix two
// datasets in one fit).
nlohmann::json sweep_manifest(const std::filesystem::path& config_path,
                              const SweepSettings& settings, const std::vector<Trial>& plan,
                              const std::string& exec_command, const std::vector<std::string>& sets,
                              const std::vector<std::string>& data);

// What the sweep refuses of its directory before it writes there: --collect where no sweep is
// (it wrote an empty one and exited 0), and with --check, read only, a place no directory can
// be made (io::check_can_create_directories).
void check_sweep_directory(const std::filesystem::path& dir, bool collect_only, bool check_only);

// Refuses a rerun whose plan (`now`, sweep.json's content) differs from the recorded one,
// naming every difference; new trials only with `options.extend`; another --exec command only
// with `options.retry_failed` where no trial has a result yet.
void check_same_plan(const std::filesystem::path& dir, const nlohmann::json& now,
                     const std::string& base_config, const SweepOptions& options);

// A trial whose summary.json lbt cannot read (lbt writes it whole: it was edited or the disk
// damaged it) is unfinished: a sweep warns and runs it again; --collect, which runs nothing,
// throws DataError naming the file rather than leave the trial out of best.csv and the fit.
void check_unreadable_summaries(const std::vector<TrialResult>& results,
                                const std::filesystem::path& trials_dir, bool collect_only);

// Finished trials whose summary.json names other kernels than this process computes with
// (LBT_CPU, LBT_GEMM, LBT_CONV; a rerun on another node or environment): a warning naming them,
// as the sweep's numbers then mix two orders of summation (it was silent: 2026-11-29 audit).
void warn_other_kernels(const std::vector<TrialResult>& results,
                        const std::filesystem::path& trials_dir);

}  // namespace lbt::experiments
