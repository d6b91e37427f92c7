// Whether a trial's summary.json still says what lbt wrote about its step to the target. An
// edit that moves it ("45", -45, past the trial, outside its own bracket) moved the fit without
// a word (2026-11-30 audits); such a summary is read as unreadable and the trial runs again.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

namespace lbt::experiments {

// Why `summary`'s steps_to_target is not what lbt wrote for a trial of `trial_steps` steps
// (0: unknown), "" where it is (or where the trial did not reach its target): a whole step
// from 1 to trial_steps, past its steps_lo, equal to its steps_hi, and, for a fixed batch,
// examples_to_target / global_batch.
std::string edited_steps_to_target(const nlohmann::json& summary, std::int64_t trial_steps);

}  // namespace lbt::experiments
