// Numeric option checks and the command line's error lines; see option_checks.hpp.
#include "cli/option_checks.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <string>
#include <system_error>

namespace lbt::cli {
namespace {

std::string whole_range(std::int64_t min, std::int64_t max) {
  if (max == std::numeric_limits<std::int64_t>::max())
    return "a whole number >= " + std::to_string(min);
  return "a whole number from " + std::to_string(min) + " to " + std::to_string(max);
}

// Short and exact enough for a bound: 0, 1, 0.5, 1e+06 (never 300 digits).
std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// Parses all of `text` as T; the error code of std::from_chars, or invalid_argument when
// something is left over.
template <class T>
std::errc parse_all(const std::string& text, T& value) {
  const char* begin = text.data();
  const char* end = begin + text.size();
  if (begin != end && *begin == '+') ++begin;  // from_chars takes no '+'
  const auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec == std::errc() && ptr != end) return std::errc::invalid_argument;
  return begin == end ? std::errc::invalid_argument : ec;
}

}  // namespace

CLI::Validator whole_number(std::int64_t min, std::int64_t max) {
  const std::string range = whole_range(min, max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        std::int64_t value = 0;
        const std::errc ec = parse_all(text, value);
        if (ec == std::errc::result_out_of_range) return "'" + text + "' is too large: " + range;
        if (ec != std::errc()) return "'" + text + "' is not " + range;
        if (value < min || value > max) return text + " is out of range: " + range;
        return {};
      },
      range, "whole_number");
}

CLI::Validator number_in(double min, double max) {
  const std::string range = "a number from " + short_number(min) + " to " + short_number(max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        double value = 0;
        const std::errc ec = parse_all(text, value);
        if (ec == std::errc::result_out_of_range) return "'" + text + "' is out of range: " + range;
        if (ec != std::errc() || !std::isfinite(value)) return "'" + text + "' is not " + range;
        if (value < min || value > max) return text + " is out of range: " + range;
        return {};
      },
      range, "number_in");
}

CLI::Validator non_empty_path() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "is empty; give a path, or leave the option out for its default" : "";
      },
      "PATH", "non_empty_path");
}

CLI::Validator positive_number() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        const std::errc ec = parse_all(text, value);
        if (ec == std::errc::result_out_of_range) return "'" + text + "' is out of range";
        if (ec != std::errc() || !std::isfinite(value)) return "'" + text + "' is not a number";
        if (!(value > 0)) return text + " must be above 0";
        return {};
      },
      "a number above 0", "positive_number");
}

int report_parse_error(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
  // The subcommand the error belongs to, for the hint (the first one parsed, if any).
  std::string command = "lbt";
  for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
  // A misspelt command read "A subcommand is required": name the word and the commands.
  const std::vector<std::string> left = app.remaining();
  if (app.get_subcommands().empty() && !left.empty() && left.front().rfind("-", 0) != 0) {
    std::string names;
    for (const CLI::App* sub : app.get_subcommands({}))
      names += (names.empty() ? "" : ", ") + sub->get_name();
    std::fprintf(stderr,
                 "error: '%s' is not an lbt command\nhint: the commands: %s (`lbt --help`)\n",
                 left.front().c_str(), names.c_str());
    return 2;
  }
  std::fprintf(stderr, "error: %s\n", e.what());
  std::fprintf(stderr, "hint: `%s --help` lists the options and the values each takes\n",
               command.c_str());
  return 2;
}

void keep_first_of_each(std::vector<std::int64_t>& values) {
  std::vector<std::int64_t> once;
  for (const std::int64_t v : values)
    if (std::find(once.begin(), once.end(), v) == once.end()) once.push_back(v);
  values = std::move(once);
}

}  // namespace lbt::cli
