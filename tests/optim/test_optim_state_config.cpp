// optim/: state save/load continues bitwise, config validation errors, exclusions by name.
#include <boost/test/unit_test.hpp>

#include <cstring>
#include <sstream>

#include "core/error.hpp"
#include "optim_fixture.hpp"
#include "support/recording_device.hpp"

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
      for (int t = 10; t < 20; ++t)
        test::do_step(*resumed, w_resumed, grads_at(t, 9), p.segments, 0.05, t);
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
  BOOST_CHECK_EXCEPTION(
      optim::load_state(adam->state(), s, "ck.bin"), DataError,
      [](const DataError& e) { return std::string(e.what()).find("ck.bin") != std::string::npos; });
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
  BOOST_TEST(
      error_of("[optimizer]\nname='adam'\nbeta1=1.0\n").find("optimizer.beta1 must be in [0, 1)") !=
      std::string::npos);
  BOOST_TEST(error_of("[optimizer]\nname='lamb'\nbeta1=-0.1\n").find("optimizer.beta1") !=
             std::string::npos);
  BOOST_TEST(error_of("[optimizer]\nname='adamw'\nweight_decay=-0.1\n")
                 .find("optimizer.weight_decay must be >= 0") != std::string::npos);
  BOOST_TEST(
      error_of("[optimizer]\nname='sgd'\nweight_decay=-1\n").find("optimizer.weight_decay") !=
      std::string::npos);
  const std::string unknown = error_of("[optimizer]\nname='adamax'\n");
  BOOST_TEST(unknown.find("optimizer.name") != std::string::npos);
  BOOST_TEST(
      unknown.find("sgd, momentum, nesterov, adam, adamw, lars, larc, lamb") != std::string::npos,
      unknown);
  BOOST_TEST(error_of("[optimizer]\nname='larc'\n[optimizer.larc]\nbase='lamb'\n")
                 .find("sgd, momentum, nesterov, adam, adamw") != std::string::npos);
  BOOST_TEST(error_of("[optimizer]\nname='lars'\n[optimizer.lars]\ndenominator='exactly'\n")
                 .find("paper, exact") != std::string::npos);
  // Nesterov's rule names the key that breaks it (a dampening was blamed on optimizer.nesterov).
  BOOST_TEST(error_of("[optimizer]\nname='nesterov'\nmomentum=0.0\n")
                 .find("optimizer.momentum must be > 0 with Nesterov momentum") !=
             std::string::npos);
  BOOST_TEST(error_of("[optimizer]\nname='nesterov'\ndampening=0.5\n")
                 .find("optimizer.dampening must be 0 with Nesterov momentum, got 0.5") !=
             std::string::npos);
  // A key of another optimizer is named as such, with the optimizers that use it (LARC's base
  // among them: --help listed beta1 as adam's, adamw's and lamb's alone).
  BOOST_TEST(error_of("[optimizer]\nname='sgd'\nbeta1=0.9\n")
                 .find("optimizer.beta1 is not used with optimizer.name = \"sgd\" (it applies to "
                       "optimizer.name (or, under larc, optimizer.larc.base) = adam | adamw | "
                       "lamb)") != std::string::npos);
  // Under LARC, the wrapped optimizer's keys apply, and LARC's own decay.
  BOOST_TEST(error_of("[optimizer]\nname='larc'\nbeta1=0.8\nweight_decay=0.1\n[optimizer.larc]\n"
                      "base='adam'\n") == "no error");
}

// inf passes a check such as ">= 0": weight_decay = inf trained to "diverged", Adam's eps = inf
// never moved the weights, LARS's trust coefficient = inf diverged at step 2 (2026-11-29 audit).
// Every number key refuses inf and nan (Config::get_double), naming the key.
BOOST_AUTO_TEST_CASE(inf_and_nan_are_refused_naming_the_key) {
  const auto says = [](const std::string& toml, const std::string& part) {
    const std::string e = error_of(toml);
    BOOST_TEST(e.find(part) != std::string::npos, e);
  };
  says("[optimizer]\nname='sgd'\nweight_decay=inf\n",
       "optimizer.weight_decay must be a finite number, got inf");
  says("[optimizer]\nname='adam'\neps=inf\n", "optimizer.eps must be a finite number, got inf");
  says("[optimizer]\nname='lars'\n[optimizer.lars]\ntrust_coefficient=+inf\n",
       "optimizer.lars.trust_coefficient must be a finite number, got inf");
  says("[optimizer]\nname='larc'\n[optimizer.larc]\neps=nan\n",
       "optimizer.larc.eps must be a finite number, got nan");
}

// The schema's defaults are the option structs' defaults: the two ways to build an optimizer
// (C++ aggregates, TOML) agree.
BOOST_AUTO_TEST_CASE(schema_defaults_equal_the_option_structs) {
  const auto o = [](const char* name) {
    return test::options_of(std::string("[optimizer]\nname='") + name + "'\n");
  };
  BOOST_TEST(o("sgd").sgd.momentum == optim::SgdOptions{}.momentum);
  BOOST_TEST(o("sgd").sgd.weight_decay == optim::SgdOptions{}.weight_decay);
  BOOST_TEST(o("adam").adam.eps == optim::AdamOptions{}.eps);
  BOOST_TEST(o("adam").adam.beta2 == optim::AdamOptions{}.beta2);
  BOOST_TEST(o("adamw").adam.weight_decay == 0.01);  // AdamW's published default
  BOOST_TEST(o("lars").lars.weight_decay == optim::LarsOptions{}.weight_decay);
  BOOST_TEST(o("lars").lars.trust_coefficient == optim::LarsOptions{}.trust_coefficient);
  BOOST_TEST(o("lamb").lamb.eps == optim::LambOptions{}.eps);
  BOOST_TEST(o("lamb").lamb.weight_decay == optim::LambOptions{}.weight_decay);
  BOOST_TEST(o("larc").larc.trust_coefficient == optim::LarcOptions{}.trust_coefficient);
  BOOST_TEST(o("larc").larc.eps == optim::LarcOptions{}.eps);
  BOOST_TEST(o("larc").larc.weight_decay == optim::LarcOptions{}.weight_decay);
  BOOST_TEST(o("lars").lars.phi.clamp_max == optim::PhiOptions{}.clamp_max);
}

BOOST_AUTO_TEST_CASE(every_switch_is_reachable_from_set_overrides) {
  Config c = Config::from_string("[optimizer]\nname='sgd'\nmomentum = 0.8\ndampening = 0.1\n");
  c.set("optimizer.name=lars");
  c.set("optimizer.lars.denominator=exact");
  c.set("optimizer.lars.phi=clamp");
  c.set("optimizer.lars.clamp_max=3.5");
  Schema schema;
  schema.add(optim::optimizer_keys());
  const auto notes =
      c.validate(schema);  // sgd's dampening is dropped, momentum kept (LARS has one)
  BOOST_TEST_REQUIRE(notes.size() == 1u);
  BOOST_TEST(notes[0].find("dropped optimizer.dampening = 0.1") != std::string::npos);
  auto opt = optim::make_optimizer(optim::read_optimizer_options(c), 4);
  BOOST_TEST(opt->describe().find("m=0.8") != std::string::npos, opt->describe());
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
  optim::apply_exclusions(
      test::options_of(
          "[optimizer]\nname = \"lars\"\nno_decay = ['bn*']\nno_trust_ratio = ['out.*']\n"),
      segments);
  BOOST_TEST(segments[0].weight_decay);
  BOOST_TEST(segments[0].trust_ratio);
  BOOST_TEST(!segments[1].weight_decay);  // default for biases stays
  BOOST_TEST(!segments[2].weight_decay);
  BOOST_TEST(segments[2].trust_ratio);
  BOOST_TEST(segments[3].weight_decay);
  BOOST_TEST(!segments[3].trust_ratio);
  const auto typo = test::options_of("[optimizer]\nno_decay = ['*.bais']\n");
  BOOST_CHECK_EXCEPTION(
      optim::apply_exclusions(typo, segments), ConfigError, [](const ConfigError& e) {
        return std::string(e.what()).find("'*.bais' matches none") != std::string::npos &&
               e.hint().find("fc1.bias") != std::string::npos;
      });
}

// The backend seam (core/device.hpp): the optimizer's state is allocated on the model's device,
// one parameter-sized buffer per state tensor (Adam: m and v; LARC over momentum: momentum),
// and steps there as on the host; a device whose memory the host cannot read is refused.
BOOST_AUTO_TEST_CASE(optimizer_state_is_allocated_on_the_given_device) {
  auto options_of = [](const char* toml) {
    Config c = Config::from_string(toml);
    return optim::read_optimizer_options(c);
  };
  const std::size_t n = 37;
  for (auto [toml, buffers] : {std::pair{"[optimizer]\nname='adam'\n", 2u},
                               std::pair{"[optimizer]\nname='larc'\nlarc.base='momentum'\n", 1u},
                               std::pair{"[optimizer]\nname='sgd'\nmomentum=0\n", 0u}}) {
    test::RecordingDevice device;
    auto on_device = optim::make_optimizer(options_of(toml), n, device);
    BOOST_TEST(device.allocations == std::vector<std::size_t>(buffers, n),
               boost::test_tools::per_element());
    auto on_host = optim::make_optimizer(options_of(toml), n);
    std::vector<float> p1(n, 0.5f), p2(n, 0.5f), g(n);
    for (std::size_t i = 0; i < n; ++i) g[i] = 0.01f * static_cast<float>(i) - 0.1f;
    const std::vector<Segment> segments = {make_segment("w", 0, n, ParamKind::kWeight)};
    for (std::int64_t step = 0; step < 3; ++step) {
      on_device->step({p1, g, segments, 0.1, step});
      on_host->step({p2, g, segments, 0.1, step});
    }
    BOOST_TEST(p1 == p2, boost::test_tools::per_element());
  }
  test::RecordingDevice elsewhere(/*host_memory=*/false);
  try {
    optim::make_optimizer(options_of("[optimizer]\nname='adam'\n"), n, elsewhere);
    BOOST_FAIL("a device the host cannot read was accepted");
  } catch (const Error& e) {
    BOOST_TEST(std::string(e.what()).find("elsewhere") != std::string::npos, e.what());
  }
}
