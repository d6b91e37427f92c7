// "Did you mean ...?": the closest of a list of names to what a user typed.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace lbt {

// Levenshtein distance: insertions, deletions and substitutions of one character each.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, case aside; empty where none is plausible (more than about a
// third of the letters, and at least 3, differ, or none of the word's letters is kept).
std::string nearest(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace lbt
