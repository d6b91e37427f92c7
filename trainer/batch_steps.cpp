// A planned batch warmup; see batch_steps.hpp.
#include "trainer/batch_steps.hpp"

#include <charconv>
#include <sstream>

#include "core/error.hpp"

namespace lbt::trainer {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool whole(std::string_view s, std::int64_t& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

[[noreturn]] void bad(std::string_view key, const std::string& what, std::string_view entry) {
  throw ConfigError(std::string(key) + ": " + what + ", got '" + std::string(entry) + "'",
                    "write it as FROM_EXAMPLES:BATCH pairs, the first at 0, e.g. " +
                        std::string(key) + "=\"0:256, 51200:512, 204800:1024\"");
}

}  // namespace

std::vector<BatchStep> parse_batch_steps(std::string_view text, std::string_view key) {
  std::vector<BatchStep> steps;
  if (trim(text).empty()) bad(key, "at least one stage", text);
  while (true) {
    const std::size_t comma = text.find(',');
    const std::string_view entry = trim(text.substr(0, comma));
    const std::size_t colon = entry.find(':');
    BatchStep s{};
    if (colon == std::string_view::npos || !whole(trim(entry.substr(0, colon)), s.from_examples) ||
        !whole(trim(entry.substr(colon + 1)), s.batch)) {
      bad(key, "each stage FROM_EXAMPLES:BATCH in whole numbers", entry);
    }
    if (s.batch <= 0) bad(key, "a batch > 0", entry);
    if (steps.empty() && s.from_examples != 0) bad(key, "the first stage to start at 0", entry);
    if (!steps.empty() && s.from_examples <= steps.back().from_examples)
      bad(key, "stages in increasing order of FROM_EXAMPLES", entry);
    steps.push_back(s);
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return steps;
}

std::string format_batch_steps(std::span<const BatchStep> steps) {
  std::ostringstream out;
  for (std::size_t i = 0; i < steps.size(); ++i)
    out << (i ? ", " : "") << steps[i].from_examples << ':' << steps[i].batch;
  return out.str();
}

std::int64_t batch_at(std::span<const BatchStep> steps, std::int64_t examples_seen) {
  std::int64_t batch = steps.front().batch;
  for (const BatchStep& s : steps) {
    if (s.from_examples > examples_seen) break;
    batch = s.batch;
  }
  return batch;
}

std::int64_t examples_after(std::span<const BatchStep> steps, std::int64_t step_count) {
  std::int64_t examples = 0;
  for (std::int64_t i = 0; i < step_count; ++i) examples += batch_at(steps, examples);
  return examples;
}

}  // namespace lbt::trainer
