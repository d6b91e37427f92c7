// core/toml_text and core/nearest: floats written short and read back exactly, the deepest
// dotted key counted by hand, and "did you mean" suggestions only where plausible.
#include <boost/test/unit_test.hpp>

#include <toml++/toml.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/nearest.hpp"
#include "core/toml_text.hpp"

using namespace lbt;

// Distances by hand (kitten -> sitting: 2 substitutions, 1 insertion); a suggestion only within
// about a third of the letters (a short word keeps one of its own), and none for a word far
// longer than every candidate.
BOOST_AUTO_TEST_CASE(the_nearest_name_is_suggested_only_when_plausible) {
  BOOST_TEST(edit_distance("kitten", "sitting") == 3u);
  BOOST_TEST(edit_distance("", "abc") == 3u);
  const std::vector<std::string> names = {"optimizer.lr", "optimizer.momentum", "train.steps"};
  BOOST_TEST(nearest("optimizer.lerning", names) == "optimizer.lr");
  BOOST_TEST(nearest("TRAIN.STEPS", names) == "train.steps");
  BOOST_TEST(nearest("model.spec", names) == "");
  BOOST_TEST(nearest(std::string(1 << 20, 'x'), names) == "");
  // A short word keeps at least one of its letters in what is suggested.
  const std::vector<std::string> sections = {"data", "model", "lr"};
  BOOST_TEST(nearest("a", sections) == "");
  BOOST_TEST(nearest("xy", sections) == "");
  BOOST_TEST(nearest("dat", sections) == "data");
  BOOST_TEST(nearest("lt", sections) == "lr");
}

// The deepest dotted key, counted by hand: headers, key lines, quoted parts (whose dots are
// their own), values, comments and multi-line strings.
BOOST_AUTO_TEST_CASE(the_deepest_key_is_counted_outside_strings_and_comments) {
  const auto depth = [](std::string_view text) {
    const KeyDepth d = deepest_key(text);
    return std::pair<std::size_t, std::size_t>(d.parts, d.line);
  };
  using P = std::pair<std::size_t, std::size_t>;
  BOOST_TEST((depth("[a.b.c]\n") == P{3, 1}));
  BOOST_TEST((depth("x = 1.5\n[a]\nb . c.d.e = \"x.y.z.w.v.u\"\n# a.b.c.d.e.f.g\n") == P{4, 3}));
  BOOST_TEST((depth("a.'b.c.d.e.f'.g = 1") == P{3, 1}));
  BOOST_TEST((depth("s = '''\na.b.c.d.e\n'''\nk.l = [1.5, 2.5]\n") == P{2, 4}));
  BOOST_TEST((depth("x = {a.b.c = 1, d = 2}") == P{3, 1}));
  BOOST_TEST((depth("") == P{1, 1}));
}

BOOST_AUTO_TEST_CASE(floats_are_written_short_and_read_back_exactly) {
  BOOST_TEST(shortest_floats("lr = 0.050000000000000003\n") == "lr = 0.05\n");
  BOOST_TEST(shortest_floats("x = [ 0.10000000000000001, 2, 8.0 ]") == "x = [ 0.1, 2, 8.0 ]");
  BOOST_TEST(shortest_floats("big = 1.0000000000000000e+20") == "big = 1e+20");
  BOOST_TEST(shortest_floats("f = 1.00000000000000000e+02") == "f = 100.0");
  BOOST_TEST(shortest_floats("z = -0.0") == "z = -0.0");
  BOOST_TEST(shortest_floats("w = 0.00010000000000000000") == "w = 0.0001");  // not 1e-04
  BOOST_TEST(shortest_floats("e = 1.0000000000000001e-08") == "e = 1e-08");
  // Strings, comments, integers, dates, times, inf and numbers inside bare keys stay as written.
  for (const char* same :
       {"path = '/d/0.050000000000000003'", R"(s = "a \" 0.10000000000000001")",
        "# 0.10000000000000001", "n = 100", "d = 1979-05-27", "t = 07:32:00.50000000000000001",
        "i = -inf", "a.1.50000000000000001 = 2", "m = '''x\n0.10000000000000001'''"}) {
    BOOST_TEST(shortest_floats(same) == same);
  }
  // Any double, printed by toml++ and shortened, reads back as the same float, bit for bit.
  std::mt19937_64 bits(7);
  std::vector<double> values = {0.05, 3.0, -0.0, 1e22, 5e-324, 1.7976931348623157e308, 0.1 + 0.2};
  while (values.size() < 5000) {
    double v;
    const std::uint64_t b = bits();
    std::memcpy(&v, &b, sizeof v);
    if (std::isfinite(v)) values.push_back(v);
  }
  for (const double v : values) {
    const std::string text = toml_text(toml::table{{"v", v}});
    const toml::table back = toml::parse(text);
    BOOST_TEST_REQUIRE(back["v"].is_floating_point(), text);
    const double read = *back["v"].value<double>();
    BOOST_TEST(std::memcmp(&read, &v, sizeof v) == 0, text);
  }
}

// A --set value TOML refuses is a bare string unless it can only be TOML written wrong: "[1,"
// became a no_decay pattern and '"bn' a string with a quote in it (2026-11-29).
BOOST_AUTO_TEST_CASE(a_set_value_that_is_broken_toml_is_named_not_taken_as_a_string) {
  const auto what = [](std::string_view value) { return unparsed_value_problem("k", value).what; };
  BOOST_TEST(what("[\"bias\",").starts_with("not a TOML array"));
  BOOST_TEST(what(" [bias]").starts_with("not a TOML array"));
  BOOST_TEST(what("{x = ").starts_with("not a TOML inline table"));
  BOOST_TEST(what("\"bn") == "a quoted string that is not closed");
  BOOST_TEST(what("'bn") == "a quoted string that is not closed");
  BOOST_TEST(what("99999999999999999999").starts_with("the number is out of range"));
  BOOST_TEST(what("-1e999").starts_with("the number is out of range"));
  BOOST_TEST(unparsed_value_problem("k", "[1,").fix.find("--set 'k=[") != std::string::npos);
  for (const char* bare : {"mlp:784-10", "resnet:8", "val_loss<=0.14", "0x", "007", "bn*"})
    BOOST_TEST(what(bare).empty(), bare);
}
