// optim/: state save/load continues bitwise, config validation errors, exclusions by name.
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <sstream>

#include "core/error.hpp"
#include "optim_fixture.hpp"

using namespace lbt;

namespace {

std::vector<float> grads_at(int step, std::size_t n) {
  std::vector<float> g(n);
  for (std::size_t i = 0; i < n; ++i) g[i] = 0.1f * std::sin(0.7f * float(i) + 1.3f * float(step));
  return g;
}

std::string error_of(const std::string& toml) {
  try {
    test::build(toml, 9);
  } catch (const ConfigError& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  return "no error";
}

}  // namespace

BOOST_AUTO_TEST_CASE(save_reload_continue_is_bitwise_equal_to_uninterrupted) {
  for (std::string name : {"sgd", "nesterov", "adam", "adamw", "lars", "larc", "lamb"}) {
    BOOST_TEST_CONTEXT(name) {
      const std::string toml = "[optimizer]\nname='" + name + "'\n";
      test::SmallProblem p;
      auto full = test::build(toml, 9);
      std::vector<float> w_full = p.w, w_resumed;
      std::stringstream checkpoint;
      for (int t = 0; t < 20; ++t) {
        if (t == 10) {
          optim::save_state(full->state(), checkpoint);
          w_resumed = w_full;
        }
        test::do_step(*full, w_full, grads_at(t, 9), p.segments, 0.05, t);
      }
      auto resumed = test::build(toml, 9);
      optim::load_state(resumed->state(), checkpoint, "checkpoint");
      for (int t = 10; t < 20; ++t) test::do_step(*resumed, w_resumed, grads_at(t, 9), p.segments, 0.05, t);
      BOOST_TEST(std::memcmp(w_full.data(), w_resumed.data(), 9 * sizeof(float)) == 0);
      BOOST_TEST(!full->state().buffers().empty());
    }
  }
}

BOOST_AUTO_TEST_CASE(load_state_rejects_another_optimizers_state_naming_the_buffer) {
  auto adam = test::build("[optimizer]\nname='adam'\n", 9);
  auto sgd = test::build("[optimizer]\nname='sgd'\n", 9);
  std::stringstream s;
  optim::save_state(sgd->state(), s);
  BOOST_CHECK_EXCEPTION(optim::load_state(adam->state(), s, "ck.bin"), DataError, [](const DataError& e) {
    return std::string(e.what()).find("ck.bin") != std::string::npos;
  });
  auto small = test::build("[optimizer]\nname='sgd'\n", 5);
  std::stringstream s2;
  optim::save_state(small->state(), s2);
  BOOST_CHECK_EXCEPTION(optim::load_state(sgd->state(), s2), DataError, [](const DataError& e) {
    return std::string(e.what()).find("size of 'momentum'") != std::string::npos;
  });
  std::stringstream truncated(s2.str().substr(0, 30));
  BOOST_CHECK_THROW(optim::load_state(small->state(), truncated), DataError);
}

BOOST_AUTO_TEST_CASE(config_errors_name_the_key_and_the_valid_values) {
  BOOST_TEST(error_of("[optimizer]\nname='adam'\nbeta1=1.0\n").find("optimizer.beta1 must be in [0, 1)") != std::string::npos);
  BOOST_TEST(error_of("[optimizer]\nname='lamb'\nbeta1=-0.1\n").find("optimizer.beta1") != std::string::npos);
  BOOST_TEST(error_of("[optimizer]\nname='adamw'\nweight_decay=-0.1\n").find("optimizer.weight_decay must be >= 0") != std::string::npos);
  BOOST_TEST(error_of("[optimizer]\nname='sgd'\nweight_decay=-1\n").find("optimizer.weight_decay") != std::string::npos);
  const std::string unknown = error_of("[optimizer]\nname='adamax'\n");
  BOOST_TEST(unknown.find("optimizer.name") != std::string::npos);
  BOOST_TEST(unknown.find("sgd, momentum, nesterov, adam, adamw, lars, larc, lamb") != std::string::npos, unknown);
  BOOST_TEST(error_of("[optimizer]\nname='larc'\n[optimizer.larc]\nbase='lamb'\n").find("sgd, momentum, nesterov, adam, adamw") != std::string::npos);
  BOOST_TEST(error_of("[optimizer]\nname='lars'\n[optimizer.lars]\ndenominator='exactly'\n").find("paper, exact") != std::string::npos);
  BOOST_TEST(error_of("[optimizer]\nname='nesterov'\nmomentum=0.0\n").find("optimizer.nesterov") != std::string::npos);
  // A key for another optimizer is unknown to the chosen one.
  BOOST_TEST(error_of("[optimizer]\nname='sgd'\nbeta1=0.9\n").find("optimizer.beta1") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(every_switch_is_reachable_from_set_overrides) {
  Config c = Config::from_string("[optimizer]\nname='sgd'\n");
  c.set("optimizer.name=lars");
  c.set("optimizer.lars.denominator=exact");
  c.set("optimizer.lars.phi=clamp");
  c.set("optimizer.lars.clamp_max=3.5");
  auto opt = optim::make_optimizer(c, 4);
  BOOST_TEST(opt->describe().find("denominator=exact") != std::string::npos);
  BOOST_TEST(opt->describe().find("3.5") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(glob_patterns_match_whole_names) {
  using optim::glob_match;
  BOOST_TEST(glob_match("*.bias", "fc1.bias"));
  BOOST_TEST(!glob_match("*.bias", "fc1.bias_extra"));
  BOOST_TEST(glob_match("bn*", "bn1.weight"));
  BOOST_TEST(!glob_match("bn*", "fc.bn"));
  BOOST_TEST(glob_match("fc?.weight", "fc2.weight"));
  BOOST_TEST(glob_match("*", ""));
  BOOST_TEST(glob_match("a*b*c", "axxbyyc"));
  BOOST_TEST(!glob_match("a*b*c", "axxbyy"));
}

BOOST_AUTO_TEST_CASE(exclusions_switch_off_decay_and_trust_ratio_by_name) {
  std::vector<Segment> segments = {make_segment("fc1.weight", 0, 4, ParamKind::kWeight),
                                   make_segment("fc1.bias", 4, 2, ParamKind::kBias),
                                   make_segment("bn1.weight", 6, 2, ParamKind::kWeight),
                                   make_segment("out.weight", 8, 3, ParamKind::kWeight)};
  Config c = Config::from_string("[optimizer]\nno_decay = ['bn*']\nno_trust_ratio = ['out.*']\n");
  optim::apply_exclusions(c, segments);
  BOOST_TEST(segments[0].weight_decay);
  BOOST_TEST(segments[0].trust_ratio);
  BOOST_TEST(!segments[1].weight_decay);  // default for biases stays
  BOOST_TEST(!segments[2].weight_decay);
  BOOST_TEST(segments[2].trust_ratio);
  BOOST_TEST(segments[3].weight_decay);
  BOOST_TEST(!segments[3].trust_ratio);
  Config typo = Config::from_string("[optimizer]\nno_decay = ['*.bais']\n");
  BOOST_CHECK_EXCEPTION(optim::apply_exclusions(typo, segments), ConfigError, [](const ConfigError& e) {
    return std::string(e.what()).find("'*.bais' matches none") != std::string::npos &&
           e.hint().find("fc1.bias") != std::string::npos;
  });
}
