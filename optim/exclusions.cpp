// Per-segment policy as data (optax masks, Caffe params_lr): optimizer.no_decay and
// optimizer.no_trust_ratio glob patterns switch weight decay / trust ratio off by name.
#include "core/error.hpp"
#include "optim/optimizer.hpp"
#include "optim/optimizer_options.hpp"

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

void apply(const std::vector<std::string>& patterns, const std::string& key,
           std::vector<Segment>& segments, bool Segment::*flag) {
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
      for (std::size_t i = 0; i < segments.size() && i < 8; ++i)
        names += (i ? ", " : "") + segments[i].name;
      if (segments.size() > 8) names += ", ...";
      throw ConfigError(key + " must be a list of patterns that each match a segment, got '" +
                            pattern + "' matches none",
                        "segment names are: " + names);
    }
  }
}

}  // namespace

void apply_exclusions(const OptimizerOptions& options, std::vector<Segment>& segments) {
  apply(options.no_decay, "optimizer.no_decay", segments, &Segment::weight_decay);
  apply(options.no_trust_ratio, "optimizer.no_trust_ratio", segments, &Segment::trust_ratio);
}

}  // namespace lbt::optim
