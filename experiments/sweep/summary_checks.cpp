// A summary's step to the target against the rest of it; see summary_checks.hpp.
#include "experiments/sweep/summary_checks.hpp"

namespace lbt::experiments {

std::string edited_steps_to_target(const nlohmann::json& s, std::int64_t trial_steps) {
  const auto status = s.find("status");
  const auto at_json = s.find("steps_to_target");
  if (status == s.end() || *status != "reached_target" || at_json == s.end()) return "";
  const std::string said = "its steps_to_target " + at_json->dump();
  const std::int64_t at = at_json->is_number_integer() ? at_json->get<std::int64_t>() : -1;
  if (at < 1 || (trial_steps > 0 && at > trial_steps))
    return said + " is no step from 1 to " + std::to_string(trial_steps);
  // A field lbt wrote beside it that disagrees (absent: an older or a program's summary).
  const auto disagrees = [&](const char* key, const auto& wrong) {
    const auto it = s.find(key);
    if (it == s.end()) return std::string();
    const std::int64_t v = it->is_number_integer() ? it->get<std::int64_t>() : -1;
    return it->is_number_integer() && !wrong(v)
               ? std::string()
               : said + " disagrees with its " + key + " " + it->dump();
  };
  if (auto why = disagrees("steps_lo", [&](std::int64_t lo) { return lo < 0 || lo >= at; });
      !why.empty())
    return why;
  if (auto why = disagrees("steps_hi", [&](std::int64_t hi) { return hi != at; }); !why.empty())
    return why;
  const auto batch = s.find("global_batch");
  if (s.contains("batch_schedule") || batch == s.end() || !batch->is_number_integer()) return "";
  const std::int64_t B = batch->get<std::int64_t>();
  return disagrees("examples_to_target", [&](std::int64_t e) { return e != at * B; });
}

}  // namespace lbt::experiments
