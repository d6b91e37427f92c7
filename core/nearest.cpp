// nearest: see nearest.hpp.
#include "core/nearest.hpp"

#include <algorithm>
#include <cctype>

namespace lbt {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(std::string_view word, const std::vector<std::string>& candidates) {
  // Case is not a letter of difference: TRAIN.STEPS is train.steps, Adam is adam.
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return out;
  };
  const std::string w = lower(word);
  std::string best;
  std::size_t best_distance = std::string::npos;
  // Only suggest when the match is plausible (at most about a third of the letters differ).
  const std::size_t plausible = std::max<std::size_t>(3, word.size() / 3);
  for (const auto& c : candidates) {
    // The lengths' difference bounds the distance from below: a candidate that cannot be
    // plausible is not compared (a pasted 1 MB key would cost seconds per candidate).
    const std::size_t apart = w.size() > c.size() ? w.size() - c.size() : c.size() - w.size();
    if (apart > plausible) continue;
    std::size_t d = edit_distance(w, lower(c));
    if (d < best_distance) best_distance = d, best = c;
  }
  // ... and never a whole replacement: 'a' is three edits from 'data' but shares nothing with it.
  if (best_distance > plausible || best_distance >= w.size()) return {};
  return best;
}

}  // namespace lbt
