// Per-segment policy as data (optax masks, Caffe params_lr): optimizer.no_decay and
// optimizer.no_trust_ratio glob patterns switch weight decay / trust ratio off by name.
#include "core/error.hpp"
#include "optim/optimizer.hpp"

namespace lbt::optim {

bool glob_match(std::string_view pattern, std::string_view name) {
  // Iterative matcher with backtracking to the last '*'.
  std::size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == name[n])) {
      ++p;
      ++n;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

namespace {

void apply(Config& config, const std::string& key, std::vector<Segment>& segments,
           bool Segment::*flag) {
  const auto patterns = config.get_string_list(
      key, {}, "glob patterns (* and ?) of segment names to exclude, e.g. [\"*.bias\", \"bn*\"]");
  for (const auto& pattern : patterns) {
    bool matched = false;
    for (Segment& seg : segments) {
      if (glob_match(pattern, seg.name)) {
        seg.*flag = false;
        matched = true;
      }
    }
    if (!matched) {
      std::string names;
      for (std::size_t i = 0; i < segments.size() && i < 8; ++i) names += (i ? ", " : "") + segments[i].name;
      if (segments.size() > 8) names += ", ...";
      config.fail(key, "a list of patterns that each match a segment", "'" + pattern + "' matches none",
                  "segment names are: " + names);
    }
  }
}

}  // namespace

void apply_exclusions(Config& config, std::vector<Segment>& segments) {
  apply(config, "optimizer.no_decay", segments, &Segment::weight_decay);
  apply(config, "optimizer.no_trust_ratio", segments, &Segment::trust_ratio);
}

}  // namespace lbt::optim
