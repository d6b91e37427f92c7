// Regression from the user's own files through the real `lbt` binary: float .npy labels and
// CSV data.target_columns train a linear model that recovers a known W*, val_mse / val_r2
// match hand computations (1 and 2 MPI ranks alike), and the npy_regression preset runs after
// its generator. Bad input: test_regression_input.cpp.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "e2e/regression_files.hpp"
#include "support/cli_runner.hpp"
#include "support/run_files.hpp"
#include "trainer/data/dataset.hpp"
#include "trainer/data/npy.hpp"

namespace fs = std::filesystem;
using lbt::test::error_line;
using lbt::test::has;
using lbt::test::npy_toml;
using lbt::test::read_jsonl;
using lbt::test::run_command;
using lbt::test::run_lbt;
using lbt::test::scratch;
using lbt::test::slurp;
using lbt::test::write_file;

namespace {

nlohmann::json last_eval(const fs::path& run) {
  return read_jsonl(run / "eval.jsonl").back();
}

}  // namespace

BOOST_AUTO_TEST_CASE(float_npy_labels_train_a_linear_model_that_recovers_w_star) {
  // d = 10, s = 0.1: SGD at w* fluctuates with per-coordinate variance about lr s^2 / (2B)
  // (x ~ N(0, I), small lr) on top of the least-squares error s^2 / n_train: allow 5 sigma.
  const std::int64_t n = 4096, d = 10, validation = 512, batch = 64;
  const double s = 0.1, lr = 0.1;
  const auto draw = lbt::test::draw_regression(n, d, 1, s, 11);
  const fs::path dir = scratch() / "recover";
  lbt::test::write_regression(dir, draw);
  const auto cfg =
      write_file(dir / "cfg.toml", npy_toml(dir, "linear:10-1", validation, batch, 500, lr));
  const auto r =
      run_lbt("train --config " + cfg.string() + " --quiet --out " + (dir / "run").string());
  BOOST_TEST_INFO("stderr: " << r.err);
  BOOST_REQUIRE_EQUAL(r.code, 0);
  const auto p = lbt::test::final_params(dir / "run");
  BOOST_REQUIRE_GE(p.size(), static_cast<std::size_t>(d + 1));
  const double tol = 5.0 * s * std::sqrt(1.0 / (n - validation) + lr / (2.0 * batch));
  for (std::int64_t j = 0; j < d; ++j)
    BOOST_TEST(std::abs(p[j] - draw.w_star[j]) < tol, "w[" << j << "]");
  BOOST_TEST(std::abs(p.back()) < tol);  // no intercept in the data
  // The 1/2 convention: at w*, val_loss ~ s^2 / 2 and val_mse ~ s^2 (within sampling error).
  const auto e = last_eval(dir / "run");
  BOOST_TEST(!e.contains("val_accuracy"));
  BOOST_TEST(std::abs(e["val_mse"].get<double>() / (s * s) - 1.0) < 0.2);
  BOOST_TEST(std::abs(e["val_loss"].get<double>() / e["val_mse"].get<double>() - 0.5) < 1e-6);
  const auto summary = nlohmann::json::parse(slurp(dir / "run" / "summary.json"));
  BOOST_TEST(summary["best_val_accuracy"].is_null());
  BOOST_TEST(summary["final_val_mse"].get<double>() == e["val_mse"].get<double>());
  BOOST_TEST(summary["final_val_r2"].get<double>() > 0.99);
}

BOOST_AUTO_TEST_CASE(two_output_targets_train_and_recover_both_rows_of_w_star) {
  const std::int64_t n = 4096, d = 8, k = 2, validation = 512, batch = 64;
  const double s = 0.1, lr = 0.1;
  const auto draw = lbt::test::draw_regression(n, d, k, s, 12);
  const fs::path dir = scratch() / "two_outputs";
  lbt::test::write_regression(dir, draw);
  const auto cfg =
      write_file(dir / "cfg.toml", npy_toml(dir, "linear:8-2", validation, batch, 500, lr));
  const auto r =
      run_lbt("train --config " + cfg.string() + " --quiet --out " + (dir / "run").string());
  BOOST_TEST_INFO("stderr: " << r.err);
  BOOST_REQUIRE_EQUAL(r.code, 0);
  BOOST_TEST(has(r.out, "val_r2"));
  const auto p = lbt::test::final_params(dir / "run");
  BOOST_REQUIRE_GE(p.size(), static_cast<std::size_t>(k * d + k));
  const double tol = 5.0 * s * std::sqrt(1.0 / (n - validation) + lr / (2.0 * batch));
  for (std::int64_t i = 0; i < k * d; ++i)
    BOOST_TEST(std::abs(p[i] - draw.w_star[i]) < tol, "W[" << i << "]");
}

BOOST_AUTO_TEST_CASE(val_mse_and_r2_match_hand_computation_on_one_and_two_ranks) {
  // A zero model (lr 1e-30 keeps it there) predicts 0: val_mse = mean of y^2 over all n x k
  // values, val_loss = 1/2 sum_j y_j^2 averaged over examples, and per output
  // R^2_j = 1 - sum y_j^2 / sum (y_j - mean_j)^2, averaged over the two outputs.
  const std::int64_t n = 40, d = 3, k = 2, validation = 11;
  std::vector<double> x, y;
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t c = 0; c < d; ++c) x.push_back(0.1 * ((i * 7 + c * 3) % 11) - 0.5);
    y.push_back(static_cast<float>(3.0 + 0.25 * ((i * 5) % 9)));        // mean far from 0
    y.push_back(static_cast<float>(-1.0 + 0.5 * ((i * 3) % 7) / 7.0));  // other scale
  }
  const fs::path dir = scratch() / "metrics";
  fs::create_directories(dir);
  lbt::test::write_npy(dir / "x.npy", "<f8", {n, d}, x);
  lbt::test::write_npy(dir / "y.npy", "<f4", {n, k}, y);
  // which rows are validation: lbt's seeded split (not under test here)
  lbt::data::Dataset full, train, val;
  full.n = n, full.dim = 1, full.x.assign(n, 0.0f), full.target_dim = k;
  full.targets.assign(y.begin(), y.end());
  lbt::data::split_validation(full, validation, 3, train, val);
  double sum_sq = 0.0, r2 = 0.0;
  for (std::int64_t j = 0; j < k; ++j) {
    double mean = 0.0, sse = 0.0, sst = 0.0;
    for (std::int64_t i = 0; i < validation; ++i)
      mean += val.targets[i * k + j] / double(validation);
    for (std::int64_t i = 0; i < validation; ++i) {
      const double v = val.targets[i * k + j];
      sse += v * v;
      sst += (v - mean) * (v - mean);
    }
    sum_sq += sse;
    r2 += (1.0 - sse / sst) / k;
  }
  const double mse = sum_sq / (validation * k), loss = 0.5 * sum_sq / validation;
  // Their 95% intervals: mean +- 1.96 sd / sqrt(n) over the examples' own losses and mses, here
  // 1/2 |y_i|^2 and |y_i|^2 / k (the zero model's errors are the targets).
  double loss_ss = 0.0, mse_ss = 0.0;
  for (std::int64_t i = 0; i < validation; ++i) {
    double sq = 0.0;
    for (std::int64_t j = 0; j < k; ++j)
      sq += double(val.targets[i * k + j]) * val.targets[i * k + j];
    loss_ss += (0.5 * sq - loss) * (0.5 * sq - loss);
    mse_ss += (sq / k - mse) * (sq / k - mse);
  }
  const double loss_half = 1.959963984540054 * std::sqrt(loss_ss / (validation - 1) / validation),
               mse_half = 1.959963984540054 * std::sqrt(mse_ss / (validation - 1) / validation);

  const auto cfg =
      write_file(dir / "cfg.toml", npy_toml(dir, "linear:3-2", validation, 2, 1, 1e-30));
  // eval_batch 4: batches of 4, 4, 3 (and on 2 ranks 4, 2 and 4, 1) are summed alike
  const std::string args =
      "train --config " + cfg.string() + " --quiet --set train.eval_batch=4 --out ";
  auto check = [&](const fs::path& run, const char* what) {
    const auto e = last_eval(run);
    BOOST_TEST_INFO(what);
    BOOST_TEST(std::abs(e["val_mse"].get<double>() - mse) <= 1e-9 * mse);
    BOOST_TEST(std::abs(e["val_loss"].get<double>() - loss) <= 1e-9 * loss);
    BOOST_TEST(std::abs(e["val_r2"].get<double>() - r2) <= 1e-9 * std::abs(r2));
    const auto summary = nlohmann::json::parse(slurp(run / "summary.json"));
    BOOST_TEST(std::abs(summary["best_val_r2"].get<double>() - r2) <= 1e-9 * std::abs(r2));
    for (const auto& [key, mean, half] : {std::tuple{"final_val_loss_ci95", loss, loss_half},
                                          std::tuple{"final_val_mse_ci95", mse, mse_half}}) {
      BOOST_TEST_INFO(key);
      BOOST_REQUIRE(summary[key].is_array());
      BOOST_TEST(std::abs(summary[key][0].get<double>() - (mean - half)) <= 1e-9 * mean);
      BOOST_TEST(std::abs(summary[key][1].get<double>() - (mean + half)) <= 1e-9 * mean);
    }
    BOOST_TEST(summary["final_val_accuracy_ci95"].is_null());
    // eval.jsonl's spread of each reading, and the best's interval (one evaluation: the final's)
    BOOST_TEST(std::abs(e["val_loss_sd"].get<double>() - std::sqrt(loss_ss / (validation - 1))) <=
               1e-9 * loss);
    BOOST_TEST(std::abs(e["val_mse_sd"].get<double>() - std::sqrt(mse_ss / (validation - 1))) <=
               1e-9 * mse);
    BOOST_TEST(summary["best_val_loss_ci95"] == summary["final_val_loss_ci95"]);
    BOOST_TEST(summary["best_val_mse_ci95"] == summary["final_val_mse_ci95"]);
  };
  const auto one = run_lbt(args + (dir / "np1").string());
  BOOST_TEST_INFO("stderr: " << one.err);
  BOOST_REQUIRE_EQUAL(one.code, 0);
  check(dir / "np1", "1 rank");
  const auto two = run_command(std::string(MPIEXEC) + " --oversubscribe -np 2 " + LBT_BINARY + " " +
                               args + (dir / "np2").string());
  BOOST_TEST_INFO("stderr: " << two.err);
  BOOST_REQUIRE_EQUAL(two.code, 0);
  check(dir / "np2", "2 ranks");
}

// The best readings' intervals come from their own evaluations: a classifier at a large LR whose
// validation loss and accuracy peak before the last of 12 evaluations. best_val_accuracy_ci95 is
// the Wilson interval of eval.jsonl's highest accuracy (written out here), best_val_loss_ci95
// the lowest loss +- 1.96 of its line's val_loss_sd / sqrt(n); the status lines print the best
// accuracy's interval and say what it is.
BOOST_AUTO_TEST_CASE(the_best_readings_carry_their_own_evaluations_intervals) {
  const fs::path dir = scratch() / "best";
  const auto draw = lbt::test::draw_regression(400, 3, 1, 0.8, 5);
  std::vector<double> classes;
  for (double v : draw.y) classes.push_back(v > 0.0 ? 1.0 : 0.0);
  lbt::test::write_regression(dir, draw);
  lbt::test::write_npy(dir / "y.npy", "<i8", {400}, classes);
  const std::int64_t n = 200;
  const auto cfg = write_file(dir / "cfg.toml", npy_toml(dir, "linear:3-2", n, 8, 12, 5.0));
  const auto r =
      run_lbt("train --config " + cfg.string() +
              " --set train.eval_every=1 --set train.seed=4 --out " + (dir / "run").string());
  BOOST_TEST_INFO("stderr: " << r.err);
  BOOST_REQUIRE_EQUAL(r.code, 0);
  const auto evals = read_jsonl(dir / "run" / "eval.jsonl");
  BOOST_REQUIRE_EQUAL(evals.size(), 12u);
  std::size_t lowest = 0, highest = 0;
  for (std::size_t i = 0; i < evals.size(); ++i) {
    if (evals[i]["val_loss"].get<double>() < evals[lowest]["val_loss"].get<double>()) lowest = i;
    if (evals[i]["val_accuracy"].get<double>() > evals[highest]["val_accuracy"].get<double>())
      highest = i;
  }
  BOOST_TEST_REQUIRE(lowest + 1 < evals.size());  // the case this test is for
  BOOST_TEST_REQUIRE(highest + 1 < evals.size());
  const auto summary = nlohmann::json::parse(slurp(dir / "run" / "summary.json"));
  const double z = 1.959963984540054, p = evals[highest]["val_accuracy"].get<double>();
  const double centre = (p + z * z / (2 * n)) / (1 + z * z / n),
               half = z / (1 + z * z / n) * std::sqrt(p * (1 - p) / n + z * z / (4.0 * n * n));
  BOOST_TEST(std::abs(summary["best_val_accuracy_ci95"][0].get<double>() - (centre - half)) <=
             1e-12);
  BOOST_TEST(std::abs(summary["best_val_accuracy_ci95"][1].get<double>() - (centre + half)) <=
             1e-12);
  const double loss = evals[lowest]["val_loss"].get<double>(),
               loss_half = z * evals[lowest]["val_loss_sd"].get<double>() / std::sqrt(double(n));
  BOOST_TEST(std::abs(summary["best_val_loss_ci95"][0].get<double>() - (loss - loss_half)) <=
             1e-12);
  BOOST_TEST(std::abs(summary["best_val_loss_ci95"][1].get<double>() - (loss + loss_half)) <=
             1e-12);
  BOOST_TEST(summary["best_val_loss_ci95"] != summary["final_val_loss_ci95"]);
  char line[160];
  std::snprintf(line, sizeof line,
                "best val_accuracy: %.4f [%.4f, %.4f] (95%%, Wilson, 200 validation examples, the "
                "highest of the run's evaluations)",
                p, centre - half, centre + half);
  BOOST_TEST(has(r.out, line), r.out);
}

BOOST_AUTO_TEST_CASE(npy_regression_preset_trains_on_the_generators_files) {
  // docs/training.md's two commands ("Regression data"), from a scratch working directory (the
  // preset's paths are relative): the generator's w* and s, then the run reaches its val_r2 target.
  const fs::path dir = scratch() / "preset";
  fs::create_directories(dir);
  const std::string src = LBT_SOURCE_DIR;
  const auto gen = run_command("cd " + dir.string() + " && /usr/bin/python3 " + src +
                               "/examples/make_regression_npy.py");
  BOOST_TEST_INFO("generator: " << gen.out << gen.err);
  BOOST_REQUIRE_EQUAL(gen.code, 0);
  const auto r = run_command("cd " + dir.string() + " && " + LBT_BINARY + " train --config " + src +
                             "/experiments/configs/npy_regression.toml --quiet --out run");
  BOOST_TEST_INFO("stderr: " << r.err);
  BOOST_REQUIRE_EQUAL(r.code, 0);
  const auto summary = nlohmann::json::parse(slurp(dir / "run" / "summary.json"));
  BOOST_TEST(summary["status"].get<std::string>() == "reached_target");
  // the weights estimate the saved w* (s = 0.5, 7168 training examples, lr 0.05, B = 128)
  const auto w_star = lbt::data::read_npy(dir / "runs/regression-data/w_star.npy").values;
  const auto p = lbt::test::final_params(dir / "run");
  const double tol = 5.0 * 0.5 * std::sqrt(1.0 / 7168 + 0.05 / (2.0 * 128));
  for (std::size_t j = 0; j < w_star.size(); ++j) BOOST_TEST(std::abs(p[j] - w_star[j]) < tol, j);
}

namespace {

// `lbt noise` on dir/x.npy, dir/y.npy with `spec` held at zero (lr 1e-30; 400 steps of 256 =
// 8 micro-batches of 32, as tests/noise/test_noise.cpp): each estimator's final B_simple EMA.
std::map<std::string, double> b_simple_at_zero(const fs::path& dir, const std::string& spec) {
  std::string toml = npy_toml(dir, spec, 0, 256, 400, 1e-30,
                              "[noise]\nenabled = true\nevery = 1\nwindow_steps = 100\n"
                              "estimator = \"both\"\nema = 0.995\n");
  toml.insert(toml.find("[train]\n") + 8, "micro_batch = 32\n");  // 8 micro-batches: two-batch
  const fs::path run = dir / ("run_" + spec.substr(spec.rfind(':') + 1));
  const auto cfg = write_file(run.string() + ".toml", toml);
  const auto r =
      run_lbt("noise --config " + cfg.string() + " --quiet --no-plot --out " + run.string());
  BOOST_TEST_INFO("stderr: " << r.err);
  BOOST_REQUIRE_EQUAL(r.code, 0);
  std::map<std::string, double> last;
  for (const auto& j : read_jsonl(run / "noise.jsonl")) {
    if (!j.contains("estimator")) continue;
    const auto& b = j["b_simple_ema"];  // null while unresolved (early steps)
    last[j["estimator"].get<std::string>()] = b.is_number() ? b.get<double>() : std::nan("");
  }
  return last;
}

}  // namespace

BOOST_AUTO_TEST_CASE(lbt_noise_on_npy_regression_matches_the_closed_form_at_zero) {
  // x ~ N(0, I_d), y = x.w* + s eps, the model at w = 0. Bias-free (linear:D-1:nobias): the
  // per-example gradient is g = x r with r = -y, so G = -w* and (Isserlis)
  // Sigma = (|w*|^2 + s^2) I + w* w*^T: tr(Sigma) = (d + 1)|w*|^2 + d s^2 and
  //   B_simple = d (1 + s^2/|w*|^2) + 1.
  // With the bias (linear:D-1) the extra coordinate's gradient is r = -y: G gains a 0,
  // tr(Sigma) gains Var(y) = |w*|^2 + s^2, so B_simple = (d + 1)(1 + s^2/|w*|^2) + 1.
  const std::int64_t n = 65536, d = 16;
  const double s = 1.0;
  const auto draw = lbt::test::draw_regression(n, d, 1, s, 14);
  const fs::path dir = scratch() / "noise";
  lbt::test::write_regression(dir, draw);
  double w_sq = 0.0;
  for (double w : draw.w_star) w_sq += w * w;
  const std::pair<std::string, double> cases[] = {
      {"linear:16-1:nobias", d * (1.0 + s * s / w_sq) + 1.0},
      {"linear:16-1", (d + 1) * (1.0 + s * s / w_sq) + 1.0}};
  for (const auto& [spec, closed] : cases) {
    const auto got = b_simple_at_zero(dir, spec);
    for (const char* name : {"two_batch", "per_example"}) {
      BOOST_TEST_CONTEXT(spec << " " << name) {
        BOOST_REQUIRE(got.count(name));
        BOOST_TEST_MESSAGE(spec << " " << name << ": B_simple " << got.at(name) << " closed form "
                                << closed);
        BOOST_TEST(std::abs(got.at(name) / closed - 1.0) < 0.05);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(lbt_sweep_measures_steps_to_a_val_r2_target_and_refuses_val_accuracy) {
  const fs::path dir = scratch() / "sweep";
  lbt::test::write_regression(dir, lbt::test::draw_regression(2048, 4, 1, 0.1, 15));
  // R^2's ceiling here is |w*|^2 / (|w*|^2 + 0.01) > 0.99: every batch size can reach 0.95
  const auto cfg =
      write_file(dir / "sweep.toml", npy_toml(dir, "linear:4-1", 256, 16, 300, 0.1) +
                                         "[sweep]\nbatch_sizes = [16, 64]\nlr_multipliers = [1.0]\n"
                                         "lr_search = \"grid\"\nmax_steps = 300\n");
  const auto r = run_lbt("sweep -c " + cfg.string() + " --target \"val_r2>=0.95\" --jobs 1 -o " +
                         (dir / "out").string());
  BOOST_TEST_INFO("stdout: " << r.out << " stderr: " << r.err);
  BOOST_REQUIRE_EQUAL(r.code, 0);
  std::ifstream best(dir / "out" / "best.csv");
  std::string header, row;
  std::getline(best, header);
  int rows = 0;
  while (std::getline(best, row)) {
    ++rows;
    BOOST_TEST(has(row, ",reached_target,"), row);
  }
  BOOST_TEST(rows == 2);
  const auto refused = run_lbt("sweep -c " + cfg.string() + " --target \"val_accuracy>=0.9\" -o " +
                               (dir / "refused").string());
  BOOST_TEST(refused.code == 2);
  BOOST_TEST(has(error_line(refused.err), "regression dataset"));
  BOOST_TEST(!fs::exists(dir / "refused" / "trials"));
}

BOOST_AUTO_TEST_CASE(csv_target_columns_train_in_the_listed_order) {
  // columns a, b, c, y1, y2; data.target_columns = ["y2", "y1"]: output 0 learns W*'s row 1
  const std::int64_t n = 512, d = 3, k = 2, validation = 64, batch = 32;
  const double s = 0.1, lr = 0.1;
  const auto draw = lbt::test::draw_regression(n, d, k, s, 16);
  const fs::path dir = scratch() / "csv_train";
  std::ostringstream text;
  text << "a,b,c,y1,y2\n";
  for (std::int64_t i = 0; i < n; ++i) {
    for (std::int64_t c = 0; c < d; ++c) text << draw.x[i * d + c] << ",";
    text << draw.y[i * k] << "," << draw.y[i * k + 1] << "\n";
  }
  write_file(dir / "data.csv", text.str());
  const auto cfg = write_file(
      dir / "cfg.toml",
      "[model]\nspec = \"linear:3-2\"\ninit = \"zero\"\n[data]\ndataset = \"c\"\nformat = "
      "\"csv\"\ntrain_features = \"" +
          (dir / "data.csv").string() +
          "\"\ntarget_columns = [\"y2\", \"y1\"]\nvalidation_size = " + std::to_string(validation) +
          "\nnormalize = false\n[train]\nglobal_batch = " + std::to_string(batch) +
          "\nsteps = 400\neval_every = 400\nthreads = 1\n"
          "[optimizer]\nname = \"sgd\"\nlr = 0.1\nmomentum = 0.0\n");
  const auto r =
      run_lbt("train --config " + cfg.string() + " --quiet --out " + (dir / "run").string());
  BOOST_TEST_INFO("stderr: " << r.err);
  BOOST_REQUIRE_EQUAL(r.code, 0);
  const auto p = lbt::test::final_params(dir / "run");
  // the CSV holds x and y to 6 significant digits: far below the tolerance
  const double tol = 5.0 * s * std::sqrt(1.0 / (n - validation) + lr / (2.0 * batch));
  for (std::int64_t c = 0; c < d; ++c) {
    BOOST_TEST(std::abs(p[c] - draw.w_star[d + c]) < tol, "output 0 (y2), input " << c);
    BOOST_TEST(std::abs(p[d + c] - draw.w_star[c]) < tol, "output 1 (y1), input " << c);
  }
  BOOST_TEST(last_eval(dir / "run")["val_r2"].get<double>() > 0.95);
}
