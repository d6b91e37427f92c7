// TOML text as lbt writes it (config.toml, a sweep's base_config.toml, plan.toml): toml++'s
// printer with each float in its shortest form that reads back to the same double.
#pragma once
#include <toml++/toml.h>

#include <charconv>
#include <cstddef>
#include <string>
#include <string_view>

#include "core/shortest_text.hpp"  // shortest_text: that form, with no plain-decimal preference

namespace lbt {

// toml++ prints a double with 17 significant digits ("lr = 0.050000000000000003"): exact, but
// not what anyone typed. std::to_chars's shortest round-trip form ("0.05"; plain decimals up to
// 2 characters longer than an exponent form: "0.0001", "1e-08") is just as exact.
std::string toml_text(const toml::table& table);

// The same rewrite on text already printed (by toml++ or by an older lbt): every float outside
// a string in its shortest form, kept a float ("100.0", not "100"). Comparing configs through
// it makes a run written by an older lbt compare equal to the same config printed today.
std::string shortest_floats(std::string_view text);

// The dotted key in `text` with the most parts ([a.b.c] and a.b.c = 1 have 3; dots inside
// strings and comments do not count) and the 1-based line it starts on. toml++ recurses once
// per part as it builds and frees tables, so a config reader refuses a key far deeper than any
// lbt reads before toml++ parses it: a [a.a.a...] header of 40,000 parts overflowed the stack
// (2026-11-28). Nested arrays and inline tables toml++ limits itself (256).
struct KeyDepth {
  std::size_t parts = 0;
  std::size_t line = 0;
};
KeyDepth deepest_key(std::string_view text);

// A --set value that TOML does not parse is taken as a bare string (model.spec=mlp:784-10),
// unless it can only be a TOML value written wrong: a number past TOML's range
// (99999999999999999999, 1e999), or an array, inline table or quoted string left open ("[1,", "{a =
// 1", "'bn"): those became strings ("[1," a no_decay pattern) or "must be a number, got a string".
// What is wrong and how to write it; both empty for a bare string.
struct ValueProblem {
  std::string what, fix;
};
ValueProblem unparsed_value_problem(std::string_view key, std::string_view value);

// `text` (a path, say) for a `# ...` comment line: a newline or other control character would
// end the comment and make the rest TOML, so each is written as '?'.
std::string comment_text(std::string_view text);

}  // namespace lbt
