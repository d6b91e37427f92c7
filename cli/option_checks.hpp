// Checks of numeric command-line options in lbt's words: the option, the value given and the
// allowed range ("--jobs: '1e400' is not a whole number from 1 to 2147483647"). CLI11's own
// checks print a bound of 300 digits, exit with codes the README does not list, and let an
// int64 option take 99999999999999999999 as its largest value without a word. These run on the
// text before CLI11 converts it, so no conversion can fail or clamp after them.
#pragma once
#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <vector>

namespace lbt::cli {

// A whole number (decimal digits, optional sign) in [min, max].
CLI::Validator whole_number(std::int64_t min, std::int64_t max);

// Ceilings for counts that get multiplied (workers x micro-batch, batch x steps): a million
// workers of 2^30 examples stays below 2^50, far from int64's end, and far above any machine.
inline constexpr std::int64_t kMaxWorkers = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxBatch = std::int64_t{1} << 30;

// A whole number from `min` to the largest value of the option's type T.
template <class T>
CLI::Validator whole_number(std::int64_t min = 1) {
  constexpr auto kMax = std::numeric_limits<T>::max();
  constexpr auto kInt64Max = std::numeric_limits<std::int64_t>::max();
  return whole_number(min, kMax > static_cast<std::uint64_t>(kInt64Max)
                               ? kInt64Max
                               : static_cast<std::int64_t>(kMax));
}

// A finite number in [min, max].
CLI::Validator number_in(double min, double max);

// A finite number above 0.
CLI::Validator positive_number();

// A path given as "" meant the default without a word (-o "" wrote runs/<config>-<time>).
CLI::Validator non_empty_path();

// A list option given a value twice (-b 128,128): each value once, in the order first given, so
// a table or CSV gets no column twice.
void keep_first_of_each(std::vector<std::int64_t>& values);

// How every error of the command line ends: "error: " + the message and a hint naming the
// command's --help, exit code 2 (bad option) as the README lists; --help and --version exit 0.
int report_parse_error(const CLI::App& app, const CLI::ParseError& e);

}  // namespace lbt::cli
