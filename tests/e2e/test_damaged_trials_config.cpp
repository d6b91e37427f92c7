// A sweep's base_config.toml (the trials' config, which lbt plan turns into the planned run)
// damaged, through the real `lbt` binary: sweep.json seals it with its CRC-32, and a file cut
// to its first line, which loaded the rest as lbt's defaults and planned another model and LR
// with exit 0 (2026-11-30 audit), is refused naming it; a sweep from before the seal keeps the
// first-line check. Exit code 3: data.
#include <boost/test/unit_test.hpp>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "e2e/careless_support.hpp"

namespace fs = std::filesystem;
using lbt::test::expect_refusal;
using lbt::test::plan;
using lbt::test::slurp;
using lbt::test::sweep_copy;

BOOST_AUTO_TEST_CASE(a_trials_config_cut_short_or_emptied_is_refused_by_lbt_plan) {
  const fs::path cut = sweep_copy("cut_config");
  const std::string text = slurp(cut / "base_config.toml");
  std::ofstream(cut / "base_config.toml", std::ios::trunc) << text.substr(0, text.find('\n') + 1);
  expect_refusal(plan(cut), 3,
                 {(cut / "base_config.toml").string(), "its CRC-32 is not the one sweep.json"});
  // The sweep rerun with its own config: the seal says its trials were planned with it (the
  // cut file read as "other settings"), and the file is written again.
  const auto rerun =
      lbt::test::run_lbt("sweep --config " + (lbt::test::scratch() / "sweep.toml").string() +
                         " --jobs 2 --no-plots --quiet --out " + cut.string());
  BOOST_TEST(rerun.code == 0, rerun.err);
  BOOST_TEST(slurp(cut / "base_config.toml") == text);

  const fs::path older = sweep_copy("unsealed_config");  // a sweep from before the seal
  auto manifest = nlohmann::json::parse(slurp(older / "sweep.json"));
  BOOST_TEST(manifest.contains("base_config_crc32"));
  manifest.erase("base_config_crc32");
  std::ofstream(older / "sweep.json", std::ios::trunc) << manifest.dump(2);
  BOOST_TEST(plan(older).code == 0);  // intact: planned as before
  std::ofstream(older / "base_config.toml", std::ios::trunc).flush();
  expect_refusal(plan(older), 3, {(older / "base_config.toml").string(), "its first line"});
}

// A number past a double (1e400) in sweep.json escaped as nlohmann's own text, tag and all
// ("[json.exception.out_of_range.406] number overflow ...").
BOOST_AUTO_TEST_CASE(a_number_past_a_double_in_sweep_json_is_named_in_words) {
  const fs::path dir = sweep_copy("overflow_json");
  std::string text = slurp(dir / "sweep.json");
  text.insert(text.find('{') + 1, "\"edited\": 1e400,");
  std::ofstream(dir / "sweep.json", std::ios::trunc) << text;
  const auto r = plan(dir);
  expect_refusal(r, 3, {(dir / "sweep.json").string(), "number overflow"});
  BOOST_TEST(r.err.find("[json.exception") == std::string::npos, r.err);
}
