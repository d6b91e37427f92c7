// core/: config parsing and validation, flat buffers, rng streams, atomic writes, GEMM.
#define BOOST_TEST_MODULE core
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <vector>

#include "core/config.hpp"
#include "core/error.hpp"
#include "core/gemm.hpp"
#include "core/io.hpp"
#include "core/params.hpp"
#include "core/rng.hpp"
#include "core/sum_squares.hpp"

using namespace lbt;

BOOST_AUTO_TEST_CASE(config_reads_typed_values_and_defaults) {
  Config c = Config::from_string("[a]\nx = 1.5\nn = 3\nname = \"hi\"\nlist = [1, 2]\n");
  BOOST_TEST(c.get_double("a.x", 0.0) == 1.5);
  BOOST_TEST(c.get_int("a.n", 0) == 3);
  BOOST_TEST(c.get_double("a.n", 0.0) == 3.0);  // integers are accepted where numbers are
  BOOST_TEST(c.get_string("a.name", "") == "hi");
  BOOST_TEST(c.get_int("a.missing", 7) == 7);
  BOOST_TEST((c.get_int_list("a.list", {}) == std::vector<std::int64_t>{1, 2}));
  BOOST_CHECK_NO_THROW(c.check_no_unknown_keys());
}

BOOST_AUTO_TEST_CASE(config_set_overrides_and_bare_strings) {
  Config c = Config::from_string("[model]\nspec = \"mlp:784-10\"\n");
  c.set("model.spec=mlp:784-32-10");
  c.set("train.lr=0.25");
  BOOST_TEST(c.get_string("model.spec", "") == "mlp:784-32-10");
  BOOST_TEST(c.get_double("train.lr", 0.0) == 0.25);
  BOOST_CHECK_THROW(c.set("novalue"), ConfigError);
}

BOOST_AUTO_TEST_CASE(config_wrong_type_is_a_config_error_naming_the_key) {
  Config c = Config::from_string("[a]\nx = \"fast\"\n");
  try {
    c.get_double("a.x", 0.0);
    BOOST_FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("a.x must be a number") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(config_unknown_key_suggests_the_nearest) {
  Config c = Config::from_string("[optimizer]\nlearning_rat = 0.1\n");
  c.get_double("optimizer.learning_rate", 0.1);
  c.get_double("optimizer.momentum", 0.9);
  try {
    c.check_no_unknown_keys();
    BOOST_FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("optimizer.learning_rat") != std::string::npos);
    BOOST_TEST(e.hint().find("optimizer.learning_rate") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(config_invalid_toml_names_file_and_line) {
  try {
    Config::from_string("[a]\nx = = 2\n", "bad.toml");
    BOOST_FAIL("expected ConfigError");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()).find("bad.toml:2") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(resolved_config_round_trips) {
  Config c;
  c.get_double("optimizer.lr", 0.05);
  c.get_string("model.spec", "mlp:784-10");
  Config back = Config::from_string(c.resolved_toml());
  BOOST_TEST(back.get_double("optimizer.lr", 0.0) == 0.05);
  BOOST_TEST(back.get_string("model.spec", "") == "mlp:784-10");
}

BOOST_AUTO_TEST_CASE(a_resolved_config_sets_every_key_but_only_chosen_ones_differ_from_default) {
  Config c = Config::from_string("[schedule]\ngamma = 0.5\nwarmup = 0.0\n");
  c.get_double("schedule.gamma", 0.1);
  c.get_double("schedule.warmup", 0.0);
  c.get_double("schedule.power", 1.0);
  BOOST_TEST(c.differs_from_default("schedule.gamma"));
  BOOST_TEST(!c.differs_from_default("schedule.warmup"));  // set, but to the default
  BOOST_TEST(!c.differs_from_default("schedule.power"));   // not set
  Config back = Config::from_string(c.resolved_toml());    // what --resume reads
  back.get_double("schedule.power", 1.0);
  BOOST_TEST(back.has("schedule.power"));
  BOOST_TEST(!back.differs_from_default("schedule.power"));
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

BOOST_AUTO_TEST_CASE(sum_squares_matches_the_closed_form_at_every_tail_length) {
  // sum_{i<n} i^2 = (n-1) n (2n-1) / 6, exact in double for these n.
  for (std::size_t n : {0, 1, 31, 32, 33, 95, 1000}) {
    std::vector<float> v(n);
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
    const double expected = n == 0 ? 0.0 : (n - 1.0) * n * (2.0 * n - 1.0) / 6.0;
    BOOST_TEST(sum_squares(v) == expected, "n = " << n);
  }
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
