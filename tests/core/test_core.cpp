// core/: config parsing and validation, flat buffers, rng streams, atomic writes, GEMM.
#include <boost/test/unit_test.hpp>

#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/config.hpp"
#include "core/config_schema.hpp"
#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/io.hpp"
#include "core/params.hpp"
#include "core/rng.hpp"
#include "core/sum_squares.hpp"
#include "support/cpu_paths.hpp"

using namespace lbt;

namespace {

// A small schema of the kinds of keys lbt has: plain, listed values, and keys of one variant.
std::vector<std::string> kind_of(const Config& c) {
  return {c.peek_string("opt.name", "sgd")};
}
const KeyCondition kByKind{{"opt.name"}, kind_of};
const std::vector<KeySpec>& test_keys() {
  using enum KeyType;
  static const std::vector<KeySpec> keys = {
      {"a.x", kNumber, "0.0", "a number"},
      {"a.n", kInt, "7", "an integer"},
      {"a.name", kString, "\"\"", "a string"},
      {"a.list", kIntList, "[]", "a list"},
      {"model.spec", kString, "\"mlp:784-10\"", "spec"},
      {"opt.name", kString, "\"sgd\"", "kind", {"sgd", "adam"}},
      {"opt.learning_rate", kNumber, "0.1", "lr"},
      {"opt.momentum", kNumber, "0.9", "sgd only", {}, "", &kByKind, {"sgd"}},
      {"opt.beta1", kNumber, "0.9", "adam only", {}, "", &kByKind, {"adam"}},
      {"opt.eps", kNumber, "1e-08", "by kind", {}, "", &kByKind, {}, {{"adam", "1e-06"}}},
  };
  return keys;
}
const Schema& test_schema() {
  static const Schema s = [] {
    Schema schema;
    schema.add(test_keys())
        .retire("opt.lr_rule", "use opt.learning_rate")
        .also_known_as("lr", "opt.learning_rate");
    return schema;
  }();
  return s;
}
const KeySpec& key(std::string_view name) {
  return Schema::in(test_keys(), name);
}

std::string error_of(Config& c) {
  try {
    c.validate(test_schema());
  } catch (const ConfigError& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  return "";
}

}  // namespace

BOOST_AUTO_TEST_CASE(config_reads_typed_values_and_defaults) {
  Config c = Config::from_string("[a]\nx = 3\nname = \"hi\"\nlist = [1, 2]\n");
  BOOST_TEST(c.validate(test_schema()).empty());
  BOOST_TEST(c.get_double(key("a.x")) == 3.0);  // integers are accepted where numbers are
  BOOST_TEST(c.get_string(key("a.name")) == "hi");
  BOOST_TEST(c.get_int(key("a.n")) == 7);     // the spec's default
  BOOST_TEST(c.get_int(key("a.n"), 9) == 9);  // a derived default wins over the spec's
  BOOST_TEST((c.get_int_list(key("a.list")) == std::vector<std::int64_t>{1, 2}));
  BOOST_TEST(c.get_double(key("opt.eps")) == 1e-8);
  Config adam = Config::from_string("[opt]\nname = \"adam\"\n");
  BOOST_TEST(adam.get_double(key("opt.eps")) == 1e-6);         // the variant's default
  BOOST_CHECK_THROW(c.get_int(key("a.x")), std::logic_error);  // a getter of the wrong type
  BOOST_CHECK_THROW(Schema::in(test_keys(), "a.undeclared"), std::logic_error);
}

BOOST_AUTO_TEST_CASE(config_set_overrides_and_bare_strings) {
  Config c = Config::from_string("[model]\nspec = \"mlp:784-10\"\n");
  c.set("model.spec=mlp:784-32-10");
  c.set("a.x=0.25");
  BOOST_TEST(c.get_string(key("model.spec")) == "mlp:784-32-10");
  BOOST_TEST(c.get_double(key("a.x")) == 0.25);
  BOOST_CHECK_THROW(c.set("novalue"), ConfigError);
  // TOML written wrong is refused, not taken as a string (test_toml_text.cpp has the cases).
  BOOST_CHECK_THROW(c.set("a.list=[1,"), ConfigError);
  BOOST_TEST(!c.has("a.list"));
}

BOOST_AUTO_TEST_CASE(validation_names_wrong_types_values_and_unknown_keys) {
  Config type = Config::from_string("[a]\nx = \"fast\"\n", "t.toml");
  BOOST_TEST(error_of(type).find("t.toml: a.x must be a number, got \"fast\"") !=
             std::string::npos);
  Config value = Config::from_string("[opt]\nname = \"adma\"\n");
  BOOST_TEST(error_of(value).find("did you mean 'adam'") != std::string::npos);
  Config unknown = Config::from_string("[opt]\nlearning_rat = 0.1\n");
  const std::string e = error_of(unknown);
  BOOST_TEST(e.find("unknown config key 'opt.learning_rat'") != std::string::npos);
  BOOST_TEST(e.find("did you mean 'opt.learning_rate'") != std::string::npos);
  Config retired = Config::from_string("[opt]\nlr_rule = \"sqrt\"\n");
  BOOST_TEST(error_of(retired).find("use opt.learning_rate") != std::string::npos);
  // A value the command line set is not blamed on the file (which may not have the key).
  Config set = Config::from_string("[a]\nx = 3\n", "t.toml");
  set.set("a.x=fast");
  BOOST_TEST(error_of(set).find("a.x must be a number, got \"fast\"") == 0u, error_of(set));
  // A double a validator passes through std::to_string reads as the number, not "0.100000".
  try {
    set.fail("a.x", "> 0", std::to_string(-0.1));
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()) == "a.x must be > 0, got -0.1");
  }
  try {
    set.fail("a.x", "> 0", std::to_string(0.0));
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()) == "a.x must be > 0, got 0");
  }
  // Case is no letter of difference in the suggestion.
  Config shouted = Config::from_string("[opt]\nLEARNING_RATE = 0.1\n");
  BOOST_TEST(error_of(shouted).find("did you mean 'opt.learning_rate'") != std::string::npos,
             error_of(shouted));
}

// A key under the wrong table, or by another tool's name, is taken for the key it names before
// spelling is: train.lr suggested train.lars...-like names, optimizer.steps optimizer.eps.
BOOST_AUTO_TEST_CASE(an_unknown_key_suggests_the_key_of_that_name_in_another_table) {
  const auto suggestion = [](const std::string& toml) {
    Config c = Config::from_string(toml);
    return error_of(c).substr(error_of(c).find(" | ") + 3);
  };
  BOOST_TEST(suggestion("[a]\nmomentum = 0.5\n").starts_with("did you mean 'opt.momentum'?"));
  BOOST_TEST(suggestion("[opt]\nn = 2\n").starts_with("did you mean 'a.n'?"));
  BOOST_TEST(suggestion("[a]\nlr = 0.1\n").starts_with("did you mean 'opt.learning_rate'?"));
  BOOST_TEST(suggestion("[b]\nname = 1\n").starts_with("did you mean 'a.name' or 'opt.name'?"));
  BOOST_TEST(suggestion("[a]\nxx = 1\n").starts_with("did you mean 'a.x'?"));  // spelling
}

BOOST_AUTO_TEST_CASE(a_key_of_another_variant_is_an_error_unless_set_switched_the_variant) {
  // In the file itself, a key the chosen variant does not use is a conflict: an error.
  Config file = Config::from_string("[opt]\nname = \"adam\"\nmomentum = 0.5\n");
  const std::string e = error_of(file);
  BOOST_TEST(e.find("opt.momentum is not used with opt.name = \"adam\"") != std::string::npos);
  BOOST_TEST(e.find("applies to opt.name = sgd") != std::string::npos);
  // A --set of such a key is named as the --set (the file, which need not hold it, was).
  Config set_key = Config::from_string("[opt]\nname = \"adam\"\n", "mine.toml");
  set_key.set("opt.momentum=0.5");
  const std::string by_set = error_of(set_key);
  BOOST_TEST(by_set.starts_with("--set opt.momentum is not used with"), by_set);
  BOOST_TEST(by_set.find("mine.toml") == std::string::npos, by_set);
  // --set opt.name=adam on an sgd file: the file's sgd keys are dropped, and a note says so.
  Config switched = Config::from_string("[opt]\nname = \"sgd\"\nmomentum = 0.5\n");
  switched.set("opt.name=adam");
  const auto notes = switched.validate(test_schema());
  BOOST_TEST_REQUIRE(notes.size() == 1u);
  BOOST_TEST(notes[0].find("dropped opt.momentum = 0.5") != std::string::npos);
  BOOST_TEST(!switched.has("opt.momentum"));
  // ... but a key the user also --set for the old variant is still an error.
  Config both = Config::from_string("[opt]\nname = \"sgd\"\n");
  both.set("opt.name=adam");
  both.set("opt.momentum=0.5");
  BOOST_TEST(!error_of(both).empty());
}

BOOST_AUTO_TEST_CASE(config_invalid_toml_names_file_and_line) {
  try {
    Config::from_string("[a]\nx = = 2\n", "bad.toml");
    BOOST_FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("bad.toml:2") != std::string::npos);
  }
}

// A key thousands of parts deep overflowed toml++'s stack (2026-11-28: [a.a.a...] of 40,000
// parts, exit 139): a config or --set past 16 parts is refused by name before parsing. An empty
// table is a key too: a misspelled section is named, a known one passes.
BOOST_AUTO_TEST_CASE(deep_keys_and_unknown_empty_sections_are_config_errors) {
  std::string deep = "a";
  for (int i = 1; i < 100000; ++i) deep += ".a";
  try {
    Config::from_string("[model]\nspec = \"x\"\n[" + deep + "]\n", "deep.toml");
    BOOST_FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()) == "deep.toml:3: a key of 100000 dotted parts");
  }
  Config c;
  BOOST_CHECK_THROW(c.set(deep + "=1"), ConfigError);
  BOOST_CHECK_THROW(c.set("a.x={" + deep + " = 1}"), ConfigError);
  c.set("a.x=1.5");
  BOOST_TEST(c.has("a.x"));

  Config typo = Config::from_string("[opt]\nname = \"sgd\"\n[optt]\n");
  BOOST_TEST(
      error_of(typo) ==
      "<string>: unknown config section 'optt' | did you mean 'opt'? (remove it or fix the name); "
      "`lbt train --help` lists every key");
  Config known = Config::from_string("[opt]\n[a]\n[model]\nspec = \"mlp:784-10\"\n");
  BOOST_TEST(error_of(known) == "");
  // An endless file (--config /dev/zero read until memory ran out) stops at 16 MiB.
  try {
    Config::from_file("/dev/zero");
    BOOST_FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()) ==
               "config file /dev/zero is larger than 16 MiB: not a config");
  }
}

BOOST_AUTO_TEST_CASE(resolved_config_round_trips_and_help_lists_every_key) {
  Config c;
  c.get_double(key("opt.learning_rate"));
  c.get_string(key("model.spec"));
  Config back = Config::from_string(c.resolved_toml());
  BOOST_TEST(back.validate(test_schema()).empty());
  BOOST_TEST(back.get_double(key("opt.learning_rate")) == 0.1);
  BOOST_TEST(back.get_string(key("model.spec")) == "mlp:784-10");
  const std::string help = test_schema().help();
  for (const KeySpec& spec : test_keys()) {
    BOOST_TEST(help.find(spec.key.substr(spec.key.rfind('.') + 1) + " = ") != std::string::npos);
  }
  BOOST_TEST(help.find("eps = 1e-08 (adam: 1e-06)") != std::string::npos);
  BOOST_TEST(help.find("(only: opt.name = adam)") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(parameter_store_aligns_segments_and_excludes_biases) {
  ParameterStore store;
  store.add("fc.weight", 10, ParamKind::kWeight);
  store.add("fc.bias", 3, ParamKind::kBias);
  store.allocate();
  const auto& s = store.segments();
  BOOST_TEST(s[0].offset == 0u);
  BOOST_TEST(s[1].offset == 16u);  // 64-byte aligned
  BOOST_TEST(s[0].weight_decay);
  BOOST_TEST(!s[1].weight_decay);
  BOOST_TEST(!s[1].trust_ratio);
  BOOST_TEST(reinterpret_cast<std::uintptr_t>(store.param_ptr(1)) % 64 == 0u);
}

BOOST_AUTO_TEST_CASE(parameter_store_moves_gradients_into_lent_memory) {
  ParameterStore store;
  store.add("fc.weight", 10, ParamKind::kWeight);
  store.add("fc.bias", 3, ParamKind::kBias);
  store.allocate();
  store.grad_ptr(1)[2] = 7.0f;
  AlignedBuffer lent(64);
  store.place_grads(lent.span(), nullptr);
  BOOST_TEST(store.grads().data() == lent.data());
  BOOST_TEST(store.grads().size() == 19u);   // 16 (aligned weight) + 3
  BOOST_TEST(store.grad_ptr(1)[2] == 7.0f);  // values kept
  AlignedBuffer small(4);
  BOOST_CHECK_THROW(store.place_grads(small.span(), nullptr), Error);
}

BOOST_AUTO_TEST_CASE(sum_squares_matches_the_closed_form_at_every_tail_length_on_every_path) {
  // sum_{i<n} i^2 = (n-1) n (2n-1) / 6, exact in double for these n; scaled by 2 (exact in
  // float), 4 times that. Each path's copy must give it.
  test::on_every_cpu_path([] {
    for (std::size_t n : {0, 1, 31, 32, 33, 95, 1000}) {
      std::vector<float> v(n);
      for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
      const double expected = n == 0 ? 0.0 : (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
      BOOST_TEST(sum_squares(v) == expected, "n = " << n);
      BOOST_TEST(scale_and_sum_squares(v.data(), n, 2.0f) == 4.0 * expected, "n = " << n);
      for (std::size_t i = 0; i < n; ++i) BOOST_TEST_REQUIRE(v[i] == 2.0f * static_cast<float>(i));
    }
  });
}

BOOST_AUTO_TEST_CASE(sum_squares_gives_the_same_bits_on_every_path) {
  // Inexact sums (random values of mixed scale): the fixed lanes make the result a function of
  // the terms alone, whatever the vector width; a long-double sum bounds its error.
  auto rng = make_rng(3, RngStream::kInit);
  std::normal_distribution<float> normal;
  std::vector<float> v(100003);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = normal(rng) * (i % 7 == 0 ? 1e3f : 1e-2f);
  long double exact = 0;
  for (float x : v) exact += static_cast<long double>(x) * x;
  std::vector<double> sums;
  test::on_every_cpu_path([&] {
    sums.push_back(sum_squares(v));
    BOOST_TEST(std::abs(sums.back() - static_cast<double>(exact)) <= 1e-12 * sums.back());
  });
  for (double s : sums) BOOST_TEST(s == sums.front());
}

BOOST_AUTO_TEST_CASE(rng_streams_are_reproducible_and_independent) {
  auto a = make_rng(42, RngStream::kInit), b = make_rng(42, RngStream::kInit);
  auto c = make_rng(42, RngStream::kSampler);
  auto x = a(), y = b(), z = c();
  BOOST_TEST(x == y);
  BOOST_TEST(x != z);
}

BOOST_AUTO_TEST_CASE(atomic_write_replaces_whole_file) {
  auto dir = std::filesystem::temp_directory_path() / "lbt_test_io";
  std::filesystem::create_directories(dir);
  auto path = dir / "f.json";
  io::atomic_write(path, "first");
  io::atomic_write(path, "second");
  BOOST_TEST(io::read_file(path) == "second");
  for (auto& entry : std::filesystem::directory_iterator(dir)) {
    BOOST_TEST(entry.path().filename().string().find(".tmp.") == std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

BOOST_AUTO_TEST_CASE(sgemm_matches_hand_computed_products) {
  // A = [[1,2,3],[4,5,6]] (2x3), B = [[1,0],[0,1],[1,1]] (3x2): A*B = [[4,5],[10,11]]
  float a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 0, 0, 1, 1, 1}, c[4] = {0, 0, 0, 0};
  sgemm(false, false, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
  BOOST_TEST(c[0] == 4.0f);
  BOOST_TEST(c[1] == 5.0f);
  BOOST_TEST(c[2] == 10.0f);
  BOOST_TEST(c[3] == 11.0f);
  // A^T * A (3x3): first row [17, 22, 27]; accumulate onto C with beta = 1 twice.
  float d[9] = {0};
  sgemm(true, false, 3, 3, 2, 1.0f, a, 3, a, 3, 0.0f, d, 3);
  sgemm(true, false, 3, 3, 2, 1.0f, a, 3, a, 3, 1.0f, d, 3);
  BOOST_TEST(d[0] == 34.0f);
  BOOST_TEST(d[1] == 44.0f);
  BOOST_TEST(d[2] == 54.0f);
  // A * A^T (2x2): [[14, 32], [32, 77]]
  float e[4];
  sgemm(false, true, 2, 2, 3, 1.0f, a, 3, a, 3, 0.0f, e, 2);
  BOOST_TEST(e[1] == 32.0f);
  BOOST_TEST(e[3] == 77.0f);
}

// lbt's own files are never written through a symbolic link (io::open_own_file): a run directory
// from elsewhere whose metrics.jsonl links to another file gets a ConfigError naming the link,
// and the file it points to keeps its bytes; atomic_write replaces a link (rename), never
// writes through it; a plain file appends as before.
BOOST_AUTO_TEST_CASE(a_symbolic_link_in_lbts_place_is_refused_and_its_target_kept) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("lbt_links_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path victim = dir / "victim.txt", link = dir / "metrics.jsonl";
  std::ofstream(victim) << "precious\n";
  fs::create_symlink(victim, link);
  bool refused = false;
  try {
    lbt::io::LineAppender out(link);
  } catch (const lbt::ConfigError& e) {
    refused = std::string(e.what()).find(link.string() + " is a symbolic link") == 0;
  }
  BOOST_TEST(refused);
  BOOST_CHECK_THROW(lbt::io::refuse_symbolic_link(link), lbt::ConfigError);
  BOOST_TEST(lbt::io::read_file(victim) == "precious\n");
  lbt::io::atomic_write(link, "{}\n");
  BOOST_TEST(!fs::is_symlink(link));
  BOOST_TEST(lbt::io::read_file(victim) == "precious\n");
  lbt::io::LineAppender(link).append("{\"step\": 1}");
  BOOST_TEST(lbt::io::read_file(link) == "{}\n{\"step\": 1}\n");
  lbt::io::refuse_symbolic_link(dir / "absent");  // nothing there: nothing to refuse
  fs::remove_all(dir);
}

// A disk that fills in the middle of a metrics line must not leave a torn
// line. A file size limit (RLIMIT_FSIZE) stands in for the full disk: the kernel writes up to
// the limit and returns a short count, as it does on ENOSPC.
BOOST_AUTO_TEST_CASE(an_append_cut_short_by_a_full_disk_leaves_whole_lines_only) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("lbt_full_disk_" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(path);
  lbt::io::LineAppender out(path);
  out.append(R"({"step": 1, "loss": 0.5})");
  const auto whole = std::filesystem::file_size(path);
  struct rlimit old_limit {};
  BOOST_REQUIRE(::getrlimit(RLIMIT_FSIZE, &old_limit) == 0);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal
  struct rlimit small = old_limit;
  small.rlim_cur = whole + 10;  // room for 10 bytes of the next line
  BOOST_REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
  bool threw = false;
  try {
    out.append(R"({"step": 2, "loss": 0.25, "grad_norm": 1.5})");
  } catch (const lbt::Error&) {
    threw = true;
  }
  ::setrlimit(RLIMIT_FSIZE, &old_limit);
  std::signal(SIGXFSZ, old_handler);
  BOOST_TEST(threw);
  BOOST_TEST(std::filesystem::file_size(path) == whole);  // the first line, whole; no torn tail
  out.append(R"({"step": 3})");                           // the disk has room again: appends go on
  BOOST_TEST(lbt::io::read_file(path) == "{\"step\": 1, \"loss\": 0.5}\n{\"step\": 3}\n");
  std::filesystem::remove(path);
}
