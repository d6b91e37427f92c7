// Batch layout resolution, targets, and the validation errors of train_config.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "core/error.hpp"
#include "trainer/config/train_config.hpp"

using namespace lbt;

namespace {
trainer::TrainConfig resolve(const std::string& toml, int world) {
  Config c = Config::from_string(toml);
  return trainer::read_train_config(c, world);
}
std::string error_of(const std::string& toml, int world) {
  try {
    resolve(toml, world);
  } catch (const ConfigError& e) {
    return std::string(e.what()) + " | " + e.hint();
  }
  return "<no error>";
}
}  // namespace

BOOST_AUTO_TEST_SUITE(train_configuration)

BOOST_AUTO_TEST_CASE(global_batch_is_world_times_micro_times_accum) {
  auto t = resolve("[train]\nglobal_batch = 256\n", 4);
  BOOST_TEST(t.micro_batch == 64);
  BOOST_TEST(t.accum_steps == 1);
  t = resolve("[train]\nglobal_batch = 256\nmicro_batch = 16\n", 4);
  BOOST_TEST(t.accum_steps == 4);
  t = resolve("[train]\nglobal_batch = 256\naccum_steps = 8\n", 2);
  BOOST_TEST(t.micro_batch == 16);
}

BOOST_AUTO_TEST_CASE(impossible_batch_layouts_are_rejected_with_the_fix) {
  BOOST_TEST(
      error_of("[train]\nglobal_batch = 100\n", 3).find("divisible by the number of ranks (3)") !=
      std::string::npos);
  BOOST_TEST(
      error_of("[train]\nglobal_batch = 256\nmicro_batch = 48\n", 1).find("train.micro_batch") !=
      std::string::npos);
  BOOST_TEST(error_of("[train]\nglobal_batch = 256\nmicro_batch = 32\naccum_steps = 4\n", 1)
                 .find("train.accum_steps") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(impossible_values_name_the_key) {
  BOOST_TEST(error_of("[train]\nglobal_batch = 0\n", 1).find("train.global_batch must be > 0") !=
             std::string::npos);
  BOOST_TEST(error_of("[train]\neval_every = 0\n", 1).find("train.eval_every must be > 0") !=
             std::string::npos);
  BOOST_TEST(error_of("[train]\nglobal_batch = \"big\"\n", 1).find("must be an integer") !=
             std::string::npos);
  BOOST_TEST(error_of("[data]\ndataset = \"imagenet\"\n", 1).find("fashion-mnist") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(targets_parse_and_compare) {
  auto t = trainer::parse_target("val_accuracy>=0.88");
  BOOST_TEST(t.met(0.88));
  BOOST_TEST(!t.met(0.879));
  auto l = trainer::parse_target("val_loss<=0.3");
  BOOST_TEST(l.met(0.29));
  BOOST_TEST(!l.met(0.31));
  BOOST_TEST(!l.met(std::nan("")));  // never measured is never met
  auto mse = trainer::parse_target("val_mse<=0.25");
  BOOST_TEST(mse.met(0.25));
  BOOST_TEST(mse.for_regression_only());
  auto r2 = trainer::parse_target("val_r2>=0.9");
  BOOST_TEST(!r2.met(0.89));
  BOOST_TEST(r2.for_regression_only());
  BOOST_TEST(t.for_classification_only());
  BOOST_TEST(!trainer::parse_target("").enabled());
  BOOST_CHECK_THROW(trainer::parse_target("accuracy>0.9"), ConfigError);
  BOOST_CHECK_THROW(trainer::parse_target("val_accuracy>=high"), ConfigError);
  BOOST_CHECK_THROW(trainer::parse_target("val_rmse<=0.1"), ConfigError);
  // Spaces around the operator are read past; the threshold is the same.
  BOOST_TEST(trainer::parse_target(" val_loss <= 0.3 ").value == 0.3);
  BOOST_TEST(trainer::parse_target("val_loss <= 0.3").metric == "val_loss");
}

// A threshold no value of the metric can meet (or none at all) is refused: the run would train
// its whole budget and say the target was not reached. The ends of each range are allowed.
BOOST_AUTO_TEST_CASE(targets_no_value_can_meet_are_refused) {
  for (const char* never :
       {"val_accuracy>=1.5", "val_accuracy<=-0.1", "val_loss<=-1", "val_mse<=-0.5", "val_r2>=2",
        "val_loss<=nan", "val_loss<=inf", "val_r2>=-inf"}) {
    BOOST_TEST_CONTEXT(never) {
      BOOST_CHECK_THROW(trainer::parse_target(never), ConfigError);
    }
  }
  for (const char* edge : {"val_accuracy>=1", "val_accuracy<=0", "val_loss<=0", "val_r2>=1",
                           "val_r2>=-3", "val_loss>=100"}) {
    BOOST_TEST_CONTEXT(edge) {
      BOOST_TEST(trainer::parse_target(edge).enabled());
    }
  }
  try {
    trainer::parse_target("val_accuracy>=1.5");
  } catch (const ConfigError& e) {
    BOOST_TEST(std::string(e.what()) ==
               "train.target 'val_accuracy>=1.5' can never be met: val_accuracy lies in [0, 1]");
  }
  try {  // a percentage for a fraction: the hint gives the fraction
    trainer::parse_target("val_accuracy>=85");
  } catch (const ConfigError& e) {
    BOOST_TEST(e.hint() == "accuracy is a fraction: val_accuracy>=0.85");
  }
}

BOOST_AUTO_TEST_SUITE_END()
