// experiments::load_config, the one way every command reads a config file and its --set
// assignments: schedule.reference_batch defaults to the file's train.global_batch, so a --set of
// the batch alone is scaled by the rule (as `lbt schedule -b` scales it). Until 2026-11-29 the
// default followed the --set: `lbt train --set train.global_batch=128` on a config tuned at 32
// with linear scaling trained at the unscaled LR, and lbt plan's config trained at lr / rule.
#include <boost/test/unit_test.hpp>

#include <fstream>

#include "core/error.hpp"
#include "experiments/lbt_schema.hpp"
#include "support/process_scratch.hpp"
#include "trainer/config/run_config.hpp"

namespace fs = std::filesystem;

namespace {

const fs::path& config_dir() {
  static const lbt::test::ProcessScratch dir(lbt::test::per_process("lbt_load_config"));
  return dir.path();
}

// The config's resolved reference batch after `sets`.
std::int64_t reference_batch_of(const std::string& toml, const std::vector<std::string>& sets) {
  const fs::path path = config_dir() / "config.toml";
  std::ofstream(path) << toml;
  lbt::Config config = lbt::experiments::load_config(path, sets, nullptr);
  return lbt::trainer::resolve_run_config(config, 1).schedule.reference_batch;
}

const std::string kTunedAt32 =
    "[train]\nglobal_batch = 32\n[optimizer]\nlr = 0.1\n[schedule]\nscaling = \"linear\"\n";

}  // namespace

BOOST_AUTO_TEST_CASE(a_set_batch_keeps_the_files_reference_batch) {
  BOOST_TEST(reference_batch_of(kTunedAt32, {}) == 32);
  BOOST_TEST(reference_batch_of(kTunedAt32, {"train.global_batch=128"}) == 32);
  // Given, by the file or the command line, it is what was given.
  BOOST_TEST(reference_batch_of(kTunedAt32,
                                {"train.global_batch=128", "schedule.reference_batch=64"}) == 64);
  BOOST_TEST(
      reference_batch_of(kTunedAt32 + "reference_batch = 16\n", {"train.global_batch=128"}) == 16);
  // A file without train.global_batch was tuned at its default, 128.
  BOOST_TEST(reference_batch_of("[schedule]\nscaling = \"sqrt\"\n", {"train.global_batch=512"}) ==
             128);
}

// A recipe fills only what the config leaves unset: a warmup start given by the file or --set
// (0 included) replaces goyal's start from the unscaled LR, which made warmup_start=0 a no-op
// and 0.1 an error naming the config file (2026-11-29 audit).
BOOST_AUTO_TEST_CASE(a_given_warmup_start_replaces_the_recipes_start_from_the_unscaled_lr) {
  const fs::path path = config_dir() / "goyal.toml";
  std::ofstream(path) << kTunedAt32 << "recipe = \"goyal\"\n";
  const auto from_base_lr = [&](const std::vector<std::string>& sets) {
    lbt::Config config = lbt::experiments::load_config(path, sets, nullptr);
    return lbt::trainer::resolve_run_config(config, 1).schedule.warmup_from_base_lr;
  };
  BOOST_TEST(from_base_lr({}));
  BOOST_TEST(!from_base_lr({"schedule.warmup_start=0"}));
  BOOST_TEST(!from_base_lr({"schedule.warmup_start=0.1"}));
  BOOST_TEST(!from_base_lr({"schedule.warmup_start_lr=0.01"}));
}

// A --set value TOML reads as another type is the text given for a string key: 04:00:00 (a
// time) and 120 (an integer) for sweep.slurm_time were refused as "must be a string" with a hint
// to quote them in the file (2026-11-29 audit); a file's unquoted value is still refused.
BOOST_AUTO_TEST_CASE(a_set_string_key_takes_the_text_given_whatever_toml_reads_it_as) {
  const fs::path path = config_dir() / "slurm.toml";
  std::ofstream(path) << "[sweep]\nbatch_sizes = [16]\n";
  for (const std::string time : {"04:00:00", "120", "2-00:00:00"}) {
    lbt::Config config = lbt::experiments::load_config(path, {"sweep.slurm_time=" + time}, nullptr);
    BOOST_TEST(config.peek_string("sweep.slurm_time", "") == time);
  }
  std::ofstream(path) << "[sweep]\nslurm_time = 04:00:00\n";
  BOOST_CHECK_THROW(lbt::experiments::load_config(path, {}, nullptr), lbt::ConfigError);
}
