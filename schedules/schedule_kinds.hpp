// The schedule builder's name registries, private to schedules/ (from_config.cpp builds from
// them): units, warmup shapes, cooldown shapes and decays, each a table of name -> builder, so
// adding a kind is adding a row, not a branch. Errors name the config key (Failer).
#pragma once
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/nearest.hpp"
#include "schedules/decay.hpp"
#include "schedules/warmup.hpp"

namespace lbt::schedules::detail {

namespace s = lbt::schedules;

// Errors name the config file and the key, as Config::fail does.
// A key set by --set names no file (its message named the config file, which may not hold it).
struct Failer {
  std::string source;
  const std::set<std::string, std::less<>>* set_on_command_line = nullptr;
  [[noreturn]] void fail(std::string_view key, std::string_view constraint, std::string_view got,
                         std::string_view hint = {}) const {
    const bool from_command_line = set_on_command_line && set_on_command_line->count(key) > 0;
    throw_config_error(from_command_line ? "" : source, key, constraint, got, hint);
  }
};

// %g of x, for error messages.
std::string num(double x);

enum class Unit { kSteps, kEpochs, kSamples };
struct UnitKind {
  const char* name;
  Unit unit;
};
constexpr UnitKind kUnits[] = {
    {"steps", Unit::kSteps}, {"epochs", Unit::kEpochs}, {"samples", Unit::kSamples}};

struct WarmupKind {
  const char* name;
  s::Schedule (*build)(double start, double peak, std::int64_t steps);
};
constexpr WarmupKind kWarmups[] = {
    {"linear", s::warmup_linear},
    {"constant", s::warmup_constant},
    {"exponential", s::warmup_exponential},
    {"quadratic", s::warmup_quadratic},
};

struct CooldownKind {
  const char* name;
  s::CooldownShape shape;
};
constexpr CooldownKind kCooldowns[] = {{"linear", s::CooldownShape::kLinear},
                                       {"cosine", s::CooldownShape::kCosine},
                                       {"1-sqrt", s::CooldownShape::kOneMinusSqrt}};

// Everything a decay builder may use, read and converted once. The decay is built at unit peak.
struct DecayInputs {
  const Failer& config;
  std::int64_t warmup_steps;
  std::int64_t decay_start;  // the decay's first step (warmup_steps unless given)
  std::int64_t length;       // decay_length in steps (0: not given and the run has no room)
  bool length_given;
  std::int64_t every;  // decay_every in steps (0: not given)
  std::vector<std::int64_t> milestones;
  double gamma, power, rate, final_frac, cooldown_frac;
  bool staircase;
  s::CooldownShape cooldown_shape;
};

struct DecayKind {
  const char* name;
  s::Schedule (*build)(const DecayInputs&);
};

// The decay names and their builders (schedule_kinds.cpp).
const std::vector<DecayKind>& decay_kinds();

template <class Range>
std::string names_of(const Range& kinds) {
  std::string out;
  for (const auto& k : kinds) out += (out.empty() ? "" : ", ") + std::string(k.name);
  return out;
}

// Looks `value` up by name; an unknown one lists the valid names and the nearest.
template <class Range>
const auto& lookup(const Failer& config, const char* key, const std::string& value,
                   const Range& kinds) {
  for (const auto& k : kinds) {
    if (value == k.name) return k;
  }
  std::vector<std::string> names;
  for (const auto& k : kinds) names.emplace_back(k.name);
  std::string best = nearest(value, names);
  config.fail(key, "one of: " + names_of(kinds), "'" + value + "'",
              best.empty() ? "pick one of the names above"
                           : "did you mean '" + best + "'? (" + key + " = \"" + best + "\")");
}

}  // namespace lbt::schedules::detail
