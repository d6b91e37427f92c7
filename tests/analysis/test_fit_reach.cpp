// The fit at the edges of what a sweep can measure: a knee past 100x the largest batch size
// (B_crit above the sweep, S_min bounded only above) or below 1/100 of the smallest (no
// critical batch); intervals that replicates leave open above; too few fitted resamples for a
// 95% interval; Python's batch-size bootstrap by lbt fit's rules; quantiles beside +infinity.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "analysis/measured_fit.hpp"
#include "analysis/sweep_fit.hpp"

using namespace lbt::analysis;

BOOST_AUTO_TEST_SUITE(fit_reach)

// Steps that fall as 1/B at every batch size fit S_min ~ 1e-14 and B_crit ~ 6e18 (printed as
// B_crit = 6.296e+18 [4.9e+16, 3.0e+28]): the data bound B_crit only below. Past 100x the
// largest batch it is null with a warning, E_min (the examples every batch size needed) stays,
// and every swept batch size is in perfect scaling. Exact curves S = S_min (1 + B_crit / B)
// place the reach: 50x the largest batch is measured, 200x is not.
BOOST_AUTO_TEST_CASE(steps_that_fall_as_1_over_b_throughout_put_b_crit_above_the_sweep) {
  const auto exact = [](double s_min, double b_crit) {
    std::vector<ScalingPoint> points;
    for (double B : {16.0, 64.0, 256.0, 1024.0}) points.push_back({B, s_min * (1 + b_crit / B)});
    return points;
  };
  const CriticalBatchFit at_50x = fit_critical_batch(exact(2.0, 51200.0));
  BOOST_TEST(at_50x.B_crit == 51200.0, boost::test_tools::tolerance(1e-6));
  BOOST_TEST(!at_50x.above_sweep);
  const CriticalBatchFit at_200x = fit_critical_batch(exact(0.5, 204800.0));
  BOOST_TEST(at_200x.resolved);
  BOOST_TEST(at_200x.above_sweep);

  SweepMeasurements sweep;
  for (double B : {16.0, 64.0, 256.0, 1024.0})
    sweep.measured.push_back({B, {{102400 / B - 1, 102400 / B}}});
  const nlohmann::json fit = fit_measurements(sweep, {.resamples = 200});
  BOOST_TEST(fit["resolved"] == false);
  BOOST_TEST(fit["above_sweep"] == true);
  BOOST_TEST(fit["B_crit"].is_null());
  BOOST_TEST(fit["E_min"].get<double>() == 102400.0, boost::test_tools::tolerance(1e-9));
  // S_min is the optimiser's floor there (~1e-24): null, bounded only above, [0, hi].
  BOOST_TEST(fit["S_min"].is_null(), fit["S_min"].dump());
  BOOST_TEST(fit["intervals"]["S_min"][0] == 0.0);
  // Every replicate lies above the sweep: the percentile interval read [0, 0], a certainty no
  // measurement gave; the fewest steps measured (100, at 1024) bound S_min instead.
  BOOST_TEST(fit["intervals"]["S_min"][1].get<double>() == 100.0);  // steps 100..6400
  const auto& ci = fit["intervals"]["B_crit"];
  BOOST_TEST((ci.is_null() || ci[1].is_null()), ci.dump());  // never a finite upper end
  BOOST_TEST(fit["warning"].get<std::string>().find("1/B at every batch size") !=
             std::string::npos);
  BOOST_TEST(fit["regimes"]["perfect_scaling"]["batch_sizes"].size() == 4u);
  BOOST_TEST(fit["regimes"]["perfect_scaling"]["model_max_batch"].is_null());  // unbounded
  const std::string line = format_fit_line(fit);
  BOOST_TEST(line.find("B_crit unresolved") != std::string::npos, line);
  BOOST_TEST(line.find("S_min unresolved (<= ") != std::string::npos, line);
  BOOST_TEST(line.find("e+1") == std::string::npos, line);  // no 1e18-ish figure anywhere
  BOOST_TEST(line.find("e-") == std::string::npos, line);   // nor a 1e-24-ish one
}

// A fit whose B_crit is measured (~11x the largest batch) but whose resamples without the bend
// fall as 1/B: more than the tail's 2.5% of replicates lie above the sweep, so the interval is
// open above ([lo, null], "unbounded") where it ended at ~5e38, and those replicates' S_min is
// 0. With fewer above the sweep than the tail holds, the upper end stays finite.
BOOST_AUTO_TEST_CASE(an_interval_its_replicates_leave_open_above_is_null_not_astronomical) {
  SweepMeasurements sweep;
  for (const auto& [B, S] :
       {std::pair{16.0, 6400.0}, {64.0, 1650.0}, {256.0, 400.0}, {1024.0, 110.0}})
    sweep.measured.push_back({B, {{S - 1, S}}});
  const FitOptions options{.resamples = 400};
  const auto fits = measurement_bootstrap_fits(sweep.measured, {true, true, true}, 400, 0);
  int above = 0;
  for (const auto& f : fits) above += f.above_sweep;
  BOOST_TEST_REQUIRE(above > 0.025 * static_cast<double>(fits.size()));
  const nlohmann::json fit = fit_measurements(sweep, options);
  BOOST_REQUIRE(fit["B_crit"].is_number());
  const auto& ci = fit["intervals"]["B_crit"];
  BOOST_REQUIRE(ci.is_array());
  BOOST_TEST(ci[1].is_null());
  BOOST_TEST(ci[0].get<double>() > 0.0);
  BOOST_TEST(ci[0].get<double>() <= fit["B_crit"].get<double>());
  BOOST_TEST(fit["intervals"]["S_min"][0] == 0.0);
  const std::string line = format_fit_line(fit);
  // Resamples of 4 batch sizes with fewer than 3 distinct ones fit nothing: the line says how
  // many did.
  BOOST_TEST(line.find(", unbounded] (95% bootstrap, ") != std::string::npos, line);
  BOOST_TEST(line.find(" of 400 resamples fitted)") != std::string::npos, line);
  BOOST_TEST(measured_text(1234.5, {212.0, nullptr}) == "1234 [212, unbounded]");
  BOOST_TEST(measured_text(nullptr, {1520.0, nullptr}) == "unresolved (>= 1520)");
  BOOST_TEST(measured_text(nullptr, {0.0, 1.5}) == "unresolved (<= 1.5)");
}

// A 95% percentile interval needs a replicate in each 2.5% tail: 40 (min_resamples). From
// fewer (lbt fit --resamples 5 printed "(95% bootstrap)" intervals that were the range of the
// 2 or 3 that fitted) every interval is null and the line says why.
BOOST_AUTO_TEST_CASE(too_few_fitted_resamples_give_no_interval_and_say_so) {
  BOOST_TEST(min_resamples(0.95) == 40u);
  BOOST_TEST(min_resamples(0.9) == 20u);
  BOOST_TEST(std::isnan(percentile_interval(std::vector<double>(39, 1.0), 0.95, 1.0).lo));
  BOOST_TEST(percentile_interval(std::vector<double>(40, 1.0), 0.95, 1.0).lo == 1.0);
  SweepMeasurements sweep;
  for (const auto& [B, S] : {std::pair{16.0, 640.0}, {64.0, 180.0}, {256.0, 70.0}})
    sweep.measured.push_back({B, {{S - 9, S}, {S - 4, S + 5}, {S + 10, S + 20}}});
  const nlohmann::json fit = fit_measurements(sweep, {.resamples = 20});
  for (const char* q : {"S_min", "E_min", "B_crit"})
    BOOST_TEST(fit["intervals"][q].is_null(), q << " " << fit["intervals"][q].dump());
  const std::string line = format_fit_line(fit);
  BOOST_TEST(line.find("(no 95% interval: ") != std::string::npos, line);
  BOOST_TEST(line.find("fewer than the 40 it needs)") != std::string::npos, line);
}

// The mirror below: a knee at 1/50 of the smallest batch (S(16) 2% above S_min) is measured; one
// at 1/200 (0.5% above) is flat within any sweep's noise: no critical batch, B_crit and E_min 0
// as the boundary (a replicate there gave the interval a lower end of 2e-14).
BOOST_AUTO_TEST_CASE(a_knee_below_a_hundredth_of_the_smallest_batch_is_no_critical_batch) {
  const auto exact = [](double b_crit) {
    std::vector<ScalingPoint> points;
    for (double B : {16.0, 64.0, 256.0, 1024.0}) points.push_back({B, 500 * (1 + b_crit / B)});
    return points;
  };
  const CriticalBatchFit at_50th = fit_critical_batch(exact(16.0 / 50));
  BOOST_TEST(at_50th.resolved);
  BOOST_TEST(at_50th.B_crit == 0.32, boost::test_tools::tolerance(1e-6));
  const CriticalBatchFit at_200th = fit_critical_batch(exact(16.0 / 200));
  BOOST_TEST(!at_200th.resolved);
  BOOST_TEST(at_200th.B_crit == 0.0);
  BOOST_TEST(at_200th.E_min == 0.0);
}

// Within the reach but outside the sweep, B_crit is measured and said to be extrapolated: the
// audit's steps 20, 19, 18, 18 at B = 8..512 fit B_crit ~ 0.9 examples, 9x below the smallest
// batch; exact curves with the knee at 4x the largest batch, and inside, likewise.
BOOST_AUTO_TEST_CASE(a_knee_outside_the_batch_sizes_swept_is_called_extrapolated) {
  const auto fit_of = [](const std::vector<std::pair<double, double>>& steps) {
    SweepMeasurements sweep;
    for (const auto& [B, S] : steps) sweep.measured.push_back({B, {{S - 1, S}}});
    return fit_measurements(sweep, {.resamples = 200});
  };
  const nlohmann::json below = fit_of({{8, 20}, {32, 19}, {128, 18}, {512, 18}});
  BOOST_REQUIRE(below["resolved"] == true);
  BOOST_TEST(below["B_crit"].get<double>() < 8.0);
  BOOST_TEST(below["b_crit_extrapolated"] == "below");
  const std::string line = format_fit_line(below);
  BOOST_TEST(line.find("; B_crit lies below the batch sizes swept: the knee is extrapolated") !=
                 std::string::npos,
             line);
  std::vector<std::pair<double, double>> exact;
  for (double B : {16.0, 64.0, 256.0, 1024.0}) exact.push_back({B, 100 * (1 + 4096 / B)});
  BOOST_TEST(fit_of(exact)["b_crit_extrapolated"] == "above");
  exact.clear();
  for (double B : {16.0, 64.0, 256.0, 1024.0}) exact.push_back({B, 100 * (1 + 200 / B)});
  BOOST_TEST(fit_of(exact)["b_crit_extrapolated"].is_null());
}

// Python's fit_critical_batch bootstraps exact points by lbt fit's rules: 3 batch sizes give no
// interval (a resample that fits only reorders them; 2-point fits gave it B_crit [64, 112]).
BOOST_AUTO_TEST_CASE(the_batch_size_bootstrap_of_exact_points_follows_lbt_fits_rules) {
  const BootstrapIntervals three =
      bootstrap_critical_batch({{8, 100}, {32, 30}, {128, 15}}, 2000, 0.95, 0);
  BOOST_TEST(three.resamples == 0);
  BOOST_TEST(std::isnan(three.B_crit.lo));
  const BootstrapIntervals four =
      bootstrap_critical_batch({{8, 100}, {32, 30}, {128, 15}, {512, 11}}, 2000, 0.95, 0);
  BOOST_TEST(four.resamples > 1000);
  BOOST_TEST(four.resamples < 2000);  // those with < 3 distinct batch sizes fit nothing
  BOOST_TEST(four.B_crit.lo > 0.0);
}

BOOST_AUTO_TEST_CASE(quantiles_beside_an_infinite_replicate) {
  const double inf = HUGE_VAL;
  BOOST_TEST(quantile({1.0, 2.0, inf}, 0.5) == 2.0);  // exactly on 2: not 2 * 1 + inf * 0
  BOOST_TEST(quantile({1.0, 2.0, inf}, 0.75) == inf);
  BOOST_TEST(quantile({1.0, 2.0, 3.0}, 0.25) == 1.5);
  BOOST_TEST(interval_json({3.0, inf}).dump() == "[3.0,null]");
  BOOST_TEST(interval_json({inf, inf}).is_null());
  BOOST_TEST(interval_json({NAN, NAN}).is_null());
}

BOOST_AUTO_TEST_SUITE_END()
