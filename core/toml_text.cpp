#include "core/toml_text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>
#include <system_error>

namespace lbt {
namespace {

bool is_number_char(char c) {
  return (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.' || c == 'e' || c == 'E';
}

// What can come before a value's first character: a key's "= ", an array's "[" or ", ", or a
// line's start. A number inside a bare key (a.1e5) follows a letter, '.' or '-'.
bool starts_a_value(char before) {
  return before == ' ' || before == '\t' || before == '\n' || before == '=' || before == '[' ||
         before == ',' || before == '{';
}

// A float token in its shortest round-trip form; anything else (an integer, a date, a key
// such as a.b) is returned unchanged.
std::string shortest_float(std::string_view token) {
  if (token.find_first_of(".eE") == std::string_view::npos) return std::string(token);
  const char* first = token.data() + (token.front() == '+' ? 1 : 0);
  const char* last = token.data() + token.size();
  double value = 0.0;
  const auto [end, error] = std::from_chars(first, last, value);
  if (error != std::errc() || end != last) return std::string(token);
  // The shortest exact form; the plain decimal one where it is at most 2 characters longer, as
  // typed (0.0001 rather than 1e-04).
  char shortest[32], plain[400];
  const auto s = std::to_chars(shortest, shortest + sizeof shortest, value);
  const auto p = std::to_chars(plain, plain + sizeof plain, value, std::chars_format::fixed);
  std::string out = p.ec == std::errc() && p.ptr - plain <= s.ptr - shortest + 2
                        ? std::string(plain, p.ptr)
                        : std::string(shortest, s.ptr);
  if (out.find_first_of(".en") == std::string::npos) out += ".0";  // "100" would read as an int
  return out;
}

// The length of the string starting at text[i] (a quote), its quotes included: '...', "..."
// with backslash escapes, or the multi-line ''' and """ forms.
std::size_t string_length(std::string_view text, std::size_t i) {
  const char quote = text[i];
  const std::string_view triple = quote == '"' ? "\"\"\"" : "'''";
  if (text.substr(i, 3) == triple) {
    const auto close = text.find(triple, i + 3);
    return close == std::string_view::npos ? text.size() - i : close + 3 - i;
  }
  for (std::size_t j = i + 1; j < text.size(); ++j) {
    if (quote == '"' && text[j] == '\\') {
      ++j;
    } else if (text[j] == quote || text[j] == '\n') {
      return j + 1 - i;
    }
  }
  return text.size() - i;
}

}  // namespace

std::string shortest_floats(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"' || c == '\'') {
      const std::size_t n = string_length(text, i);
      out.append(text.substr(i, n));
      i += n;
    } else if (c == '#') {
      const std::size_t n = std::min(text.find('\n', i), text.size()) - i;
      out.append(text.substr(i, n));
      i += n;
    } else if (is_number_char(c) && (i == 0 || starts_a_value(text[i - 1]))) {
      // A token of number characters only; one that runs into a letter, '_' or ':' (a date, a
      // time, a bare key such as 1_000) is copied whole.
      std::size_t j = i;
      while (j < text.size() && is_number_char(text[j])) ++j;
      std::size_t k = j;
      while (k < text.size() && !std::isspace(static_cast<unsigned char>(text[k])) &&
             text[k] != ',' && text[k] != ']' && text[k] != '}' && text[k] != '=')
        ++k;
      out += k == j ? shortest_float(text.substr(i, j - i)) : std::string(text.substr(i, k - i));
      i = k;
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

KeyDepth deepest_key(std::string_view text) {
  KeyDepth deepest{1, 1}, current{1, 1};
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '"' || c == '\'') {  // a quoted key part continues the key; its dots are its own
      const std::size_t n = string_length(text, i);
      line += static_cast<std::size_t>(std::count(text.begin() + i, text.begin() + i + n, '\n'));
      i += n;
      continue;
    }
    if (c == '#') {
      i = std::min(text.find('\n', i), text.size());
      continue;
    }
    if (c == '.') {
      ++current.parts;
      if (current.parts > deepest.parts) deepest = current;
    } else if (c == '\n' || c == '=' || c == '[' || c == ']' || c == '{' || c == '}' || c == ',') {
      current = {1, line + (c == '\n')};
    }
    line += c == '\n';
    ++i;
  }
  return deepest;
}

std::string toml_text(const toml::table& table) {
  std::ostringstream ss;
  ss << table;
  return shortest_floats(ss.str());
}

namespace {

// Digits (and a sign) TOML refused: past int64 (a leading 0 is TOML's own refusal), or a number
// from_chars reads as out of range.
bool out_of_range_number(std::string_view value) {
  if (value.empty()) return false;
  const char* begin = value.data() + (value[0] == '-' || value[0] == '+');
  const char* end = value.data() + value.size();
  double parsed = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, parsed);
  if (ptr == end && ec == std::errc::result_out_of_range) return true;
  return begin != end && *begin != '0' &&
         std::all_of(begin, end, [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

ValueProblem unparsed_value_problem(std::string_view key, std::string_view value) {
  const std::string k(key);
  if (out_of_range_number(value)) {
    return {
        "the number is out of range (whole numbers up to 9223372036854775807, others up to "
        "about 1.8e308)",
        "give " + k + " a value in the range its --help line says"};
  }
  const std::size_t first = value.find_first_not_of(" \t");
  const char opening = first == std::string_view::npos ? ' ' : value[first];
  if (opening == '[' || opening == '{') {
    return {std::string("not a TOML ") + (opening == '[' ? "array" : "inline table") +
                " (left open, or an element that is not a TOML value)",
            opening == '['
                ? "write it whole, strings quoted inside it: --set '" + k + "=[\"bias\", \"bn*\"]'"
                : "write it whole, each value TOML: --set '" + k + "={name = \"x\"}'"};
  }
  if (opening == '"' || opening == '\'') {
    return {"a quoted string that is not closed",
            "close the quote, inside shell quotes: --set '" + k + "=\"text\"'"};
  }
  return {};
}

std::string comment_text(std::string_view text) {
  std::string out(text);
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = '?';
  }
  return out;
}

}  // namespace lbt
