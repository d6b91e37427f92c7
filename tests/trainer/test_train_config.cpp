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

// Generated data's keys and the counts narrowed to int are checked, naming the key: -5 examples
// ended in "vector::_M_default_append" (exit 1), a noise of nan trained to "diverged", and
// 2^32 + 1 threads read as 1 (2026-11-29 audit).
BOOST_AUTO_TEST_CASE(generated_data_and_narrowed_counts_are_checked_naming_the_key) {
  const std::string syn = "[data]\ndataset = \"synthetic-regression\"\n[data.synthetic]\n";
  const auto says = [](const std::string& toml, const std::string& part) {
    const std::string e = error_of(toml, 1);
    BOOST_TEST(e.find(part) != std::string::npos, e);
  };
  says(syn + "examples = -5\n", "data.synthetic.examples must be >= 1, got -5");
  says(syn + "dim = 0\n", "data.synthetic.dim must be >= 1, got 0");
  says(syn + "noise = nan\n", "data.synthetic.noise must be a finite number, got nan");
  says(syn + "noise = -2.0\n", "data.synthetic.noise must be a finite number >= 0");
  says("[train]\nthreads = 4294967297\n", "train.threads must be in [0, 4096], got 4294967297");
  says("[train]\ncheckpoint_keep = 4294967296\n", "must be in [1, 1000000], got 4294967296");
  BOOST_TEST(resolve(syn + "examples = 100\ndim = 3\nnoise = 0.0\n", 1).data.synthetic_dim == 3);
}

BOOST_AUTO_TEST_SUITE_END()
