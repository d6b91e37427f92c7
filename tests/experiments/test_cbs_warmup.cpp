// `lbt plan --from CBS_DIR` (experiments/cbs/batch_warmup.hpp): the stages worked out by hand
// from readings; then end to end from a cbs.json written here over a real reference run: the
// config it writes runs under `lbt train` with the planned batches and the reference's examples;
// bad input is one error line and exit 2 (a cbs.json holding numbers lbt cbs never writes: exit
// 3), and a file lbt plan did not write is kept.
#include <boost/test/unit_test.hpp>

#include <fstream>
#include <string>

#include "cbs_support.hpp"
#include "experiments/cbs/batch_warmup.hpp"

namespace fs = std::filesystem;
using lbt::experiments::CbsReading;
using lbt::experiments::warmup_stages;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;

namespace {

std::string stages_text(const std::vector<lbt::trainer::BatchStep>& s) {
  return lbt::trainer::format_batch_steps(s);
}

// A reference run at B = 16 (micro-batch 4), 120 steps, checkpoints every 20.
const fs::path& reference() {
  static const fs::path dir = [] {
    lbt::test::CbsReference r;
    r.batch = 16;
    r.micro = 4;
    r.steps = 120;
    r.momentum = 0.0;
    r.scaling = "sqrt";
    return lbt::test::train_reference("ref_warmup", r);
  }();
  return dir;
}

// cbs.json as lbt cbs writes it, with the points given.
fs::path write_cbs_dir(const std::string& name, const nlohmann::json& points) {
  const fs::path dir = scratch() / name;
  fs::create_directories(dir);
  const nlohmann::json j = {
      {"reference", fs::canonical(reference()).string()}, {"scaling", "sqrt"}, {"points", points}};
  std::ofstream(dir / "cbs.json") << j.dump(2);
  return dir;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(batch_warmup)

// B = 16 on a grid of 8, at most 100: step 20 below 2B -> 16 (no stage); step 40 CBS 48 -> 48;
// step 60 unmeasured -> skipped; step 80 CBS 40 -> kept at 48 (a warmup never goes down);
// step 100 at least 256 -> 96 (the largest multiple of 8 <= 100).
BOOST_AUTO_TEST_CASE(stages_by_hand) {
  const std::vector<CbsReading> r = {
      {20, 16, 16}, {40, 16, 48}, {60, 16, std::nullopt}, {80, 16, 40}, {100, 16, 256}};
  BOOST_TEST(stages_text(warmup_stages(r, 8, 100)) == "0:16, 640:48, 1600:96");
  // A grid of 12 rounds down: 16 -> 12, 48 -> 48, 256 -> 96 (the cap 100 -> 96).
  BOOST_TEST(stages_text(warmup_stages(r, 12, 100)) == "0:12, 640:48, 1600:96");
  // A grid larger than a reading's batch: at least one grid step, above the first two points'
  // critical batch (16 at step 20, 48 at step 40), which the plan warns of from the first.
  BOOST_TEST(stages_text(warmup_stages(r, 64, 1000)) == "0:64, 1600:256");
  const auto warning = lbt::experiments::above_measured_warning(r, 64);
  BOOST_TEST_REQUIRE(warning.has_value());
  BOOST_TEST(warning->find("above the critical batch measured at the reference's step 20 (16)") !=
             std::string::npos);
  BOOST_TEST(!lbt::experiments::above_measured_warning(r, 16).has_value());
}

BOOST_AUTO_TEST_CASE(the_plan_runs_with_its_batches_and_the_reference_s_examples) {
  const fs::path dir = write_cbs_dir(
      "cbs_plan",
      nlohmann::json::array({{{"step", 20},
                              {"batch", 16},
                              {"cbs", nullptr},
                              {"bound", {{"kind", "below"}, {"batch", 32}}}},
                             {{"step", 40}, {"batch", 16}, {"cbs", 32}, {"bound", nullptr}},
                             {{"step", 80},
                              {"batch", 16},
                              {"cbs", nullptr},
                              {"bound", {{"kind", "at_least"}, {"batch", 64}}}}}));
  const auto p = run_lbt("plan --from " + dir.string());
  BOOST_TEST_REQUIRE(p.code == 0, p.err);
  BOOST_TEST_MESSAGE(p.out);
  const auto plan = nlohmann::json::parse(slurp(dir / "plan.json"));
  BOOST_TEST(plan["batch_steps"] == "0:16, 640:32, 1280:64");
  BOOST_TEST(plan["budget_examples"] == 120 * 16);
  const fs::path run = scratch() / "warmup_run";
  const auto t =
      run_lbt("train --config " + (dir / "plan.toml").string() + " --quiet --out " + run.string());
  BOOST_TEST_REQUIRE(t.code == 0, t.err);
  const auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
  BOOST_TEST(summary["examples"] == 120 * 16);
  // 40 steps of 16, 20 of 32, then (1920 - 1280) / 64 = 10 of 64.
  BOOST_TEST(summary["steps"] == 70);
  const auto m = lbt::test::metrics_by_step(run);
  BOOST_TEST(m.at(40)["global_batch"] == 16);
  BOOST_TEST(m.at(41)["global_batch"] == 32);
  BOOST_TEST(m.at(61)["global_batch"] == 64);
  // sqrt scaling from the first batch: the LR at 64 is twice the LR at 16 (constant schedule).
  BOOST_TEST(m.at(61)["lr"].get<double>() == 2 * m.at(1)["lr"].get<double>(),
             boost::test_tools::tolerance(1e-12));
  // A grid of 3 x 4 rounds the first stage down to 12: its LR factor is the rule's from the
  // reference's 16, sqrt(12 / 16), as the run takes it (the table said x 1 from the first stage).
  const auto rounded = run_lbt("plan --from " + dir.string() + " --workers 3 --micro-batch 4");
  BOOST_TEST_REQUIRE(rounded.code == 0, rounded.err);
  const auto first = nlohmann::json::parse(slurp(dir / "plan.json"))["stages"][0];
  BOOST_TEST(first["batch"] == 12);
  BOOST_TEST(first["lr_factor"].get<double>() == std::sqrt(12.0 / 16.0),
             boost::test_tools::tolerance(1e-15));
  BOOST_TEST(rounded.out.find("warning") == std::string::npos, rounded.out);
  // One worker at 32 cannot start below the 16 step 20 measured: said, not silent.
  const auto above = run_lbt("plan --from " + dir.string() + " --workers 1 --micro-batch 32");
  BOOST_TEST_REQUIRE(above.code == 0, above.err);
  BOOST_TEST(above.out.find("warning: the layout's smallest batch, 32, is above the critical "
                            "batch measured at the reference's step 20 (16)") != std::string::npos,
             above.out);
  BOOST_TEST(nlohmann::json::parse(slurp(dir / "plan.json")).contains("warning"));
}

BOOST_AUTO_TEST_CASE(bad_input_is_one_error_and_keeps_files) {
  const fs::path dir =
      write_cbs_dir("cbs_bad", nlohmann::json::array({{{"step", 20}, {"batch", 16}, {"cbs", 32}}}));
  const fs::path mine = scratch() / "mine.toml";
  std::ofstream(mine) << "# my notes\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {" --max-steps 100", "--max-steps"},
      {" --workers 2", "--workers and --micro-batch"},
      {" --workers 1 --micro-batch 100000", "larger than the training set"},
      {" --out " + mine.string(), "lbt plan did not write it"},
  };
  for (const auto& [args, says] : cases) {
    const auto r = run_lbt("plan --from " + dir.string() + args);
    BOOST_TEST_CONTEXT(args << ": " << r.err) {
      BOOST_TEST(r.code == 2);
      BOOST_TEST(r.err.rfind("error: ", 0) == 0);
      BOOST_TEST(r.err.substr(0, r.err.find('\n')).find(says) != std::string::npos);
    }
  }
  BOOST_TEST(slurp(mine) == "# my notes\n");
  const fs::path empty = write_cbs_dir(
      "cbs_unmeasured",
      nlohmann::json::array({{{"step", 20}, {"batch", 16}, {"cbs", nullptr}, {"bound", nullptr}}}));
  const auto r = run_lbt("plan --from " + empty.string());
  BOOST_TEST(r.code == 2, r.err);
  BOOST_TEST(r.err.find("no measured point") != std::string::npos, r.err);
  BOOST_TEST(!fs::exists(empty / "plan.toml"));
}

// Numbers lbt cbs never writes (a CBS below the point's batch, not whole, a string or past any
// batch; a batch of 0; two points at one step; a bound of an unknown kind) are refused naming the
// file, exit 3. Before, a negative CBS dropped its stage silently, a batch of 0 moved the first
// stage and 1e300 went through llround (undefined past 2^63).
BOOST_AUTO_TEST_CASE(a_cbs_json_with_numbers_lbt_cbs_never_writes_is_refused_naming_them) {
  using nlohmann::json;
  const json good = {{"step", 40}, {"batch", 16}, {"cbs", 32}};
  const auto with = [&](const char* key, const json& value) {
    json p = good;
    p[key] = value;
    return json::array({{{"step", 20}, {"batch", 16}, {"cbs", 32}}, p});
  };
  const std::vector<std::pair<json, std::string>> cases = {
      {with("cbs", -32), "a point without a whole \"cbs\" >= 16 (-32)"},
      {with("cbs", 8), "a point without a whole \"cbs\" >= 16 (8)"},
      {with("cbs", 32.5), "a point without a whole \"cbs\" >= 16 (32.5)"},
      {with("cbs", "32"), "a point without a whole \"cbs\" >= 16 (\"32\")"},
      {with("cbs", 1e300), "a point without a whole \"cbs\" >= 16 (1e+300)"},
      {with("batch", 0), "a point without a whole \"batch\" >= 1 (0)"},
      {with("step", 20), "two points at step 20"},
      {json::array({{{"step", 40},
                     {"batch", 16},
                     {"cbs", nullptr},
                     {"bound", {{"kind", "at_least"}, {"batch", -1}}}}}),
       "a point's bound without a whole \"batch\" >= 16 (-1)"},
      // A bound of a kind lbt cbs never writes dropped its point from the plan (exit 0).
      {json::array({{{"step", 20}, {"batch", 16}, {"cbs", 32}},
                    {{"step", 40},
                     {"batch", 16},
                     {"cbs", nullptr},
                     {"bound", {{"kind", "weird"}, {"batch", 64}}}}}),
       "a point's bound of kind \"weird\", where lbt cbs writes \"below\" or \"at_least\""},
  };
  for (const auto& [points, says] : cases) {
    const fs::path dir = write_cbs_dir("cbs_numbers", points);
    const auto r = run_lbt("plan --from " + dir.string());
    BOOST_TEST_CONTEXT(points.dump() << ": " << r.err) {
      BOOST_TEST(r.code == 3);
      BOOST_TEST(r.err.substr(0, r.err.find('\n')).find(says) != std::string::npos);
      BOOST_TEST(!fs::exists(dir / "plan.toml"));
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()
