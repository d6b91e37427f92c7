// The divergence guard against hand-made loss sequences: which steps update, which are
// skipped as spikes, and when the run counts as diverged.
#include <boost/test/unit_test.hpp>

#include <limits>
#include <vector>

#include "trainer/divergence.hpp"

using namespace lbt::trainer;

namespace {

std::vector<StepVerdict> judge_all(const DivergenceOptions& options,
                                   const std::vector<double>& losses, DivergenceState& state) {
  std::vector<StepVerdict> out;
  std::string reason;
  for (double loss : losses) {
    out.push_back(judge_step(options, state, loss, /*grad_norm=*/1.0, reason));
    if (out.back() == StepVerdict::kDiverged) break;
  }
  return out;
}

constexpr auto U = StepVerdict::kUpdate, S = StepVerdict::kSkip, D = StepVerdict::kDiverged;

}  // namespace

BOOST_AUTO_TEST_SUITE(divergence_guard)

BOOST_AUTO_TEST_CASE(stop_mode_ends_at_the_first_spike) {
  DivergenceState state;
  // factor 10 over the first loss 2: a spike is loss > 20
  const auto v = judge_all({10.0, false, 5}, {2.0, 19.9, 20.0, 20.5, 1.0}, state);
  BOOST_TEST((v == std::vector<StepVerdict>{U, U, U, D}));
  BOOST_TEST(state.first_loss == 2.0);
}

BOOST_AUTO_TEST_CASE(skip_mode_drops_spikes_and_gives_up_after_the_limit_in_a_row) {
  DivergenceState state;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // limit 2: two spikes in a row are skipped, a normal step resets the count, the third spike
  // in a row ends the run.
  const auto v = judge_all({10.0, true, 2}, {2.0, 50.0, nan, 3.0, 60.0, 70.0, 80.0, 1.0}, state);
  BOOST_TEST((v == std::vector<StepVerdict>{U, S, S, U, S, S, D}));
  BOOST_TEST(state.skipped_steps == 4);
  BOOST_TEST(state.skips_in_a_row == 2);
}

BOOST_AUTO_TEST_CASE(a_nonfinite_first_loss_is_a_spike_and_the_reference_is_the_first_finite_one) {
  DivergenceState state;
  const double inf = std::numeric_limits<double>::infinity();
  std::string reason;
  BOOST_TEST((judge_step({10.0, true, 3}, state, inf, 1.0, reason) == S));
  BOOST_TEST(reason.find("NaN/Inf") != std::string::npos);
  BOOST_TEST(state.first_loss == -1.0);
  BOOST_TEST((judge_step({10.0, true, 3}, state, 4.0, 1.0, reason) == U));
  BOOST_TEST(state.first_loss == 4.0);
  // a finite loss with a non-finite gradient norm is a spike too
  BOOST_TEST((judge_step({10.0, true, 3}, state, 4.0, inf, reason) == S));
}

// A batch of one example read 0.0016 at step 0 where the untrained model's mean loss was ~17:
// the next ordinary loss, 23.6, was a spike (2026-11-29 audit). The mean over more examples is a
// floor under the reference; the first loss stays it where it is larger.
BOOST_AUTO_TEST_CASE(the_initial_mean_loss_is_a_floor_under_a_small_batchs_first_loss) {
  DivergenceState state;
  state.initial_loss = 17.0;
  std::string reason;
  BOOST_TEST((judge_step({20.0, false, 5}, state, 0.0016, 1.0, reason) == U));
  BOOST_TEST(state.first_loss == 17.0);
  BOOST_TEST((judge_step({20.0, false, 5}, state, 23.6, 1.0, reason) == U));
  BOOST_TEST((judge_step({20.0, false, 5}, state, 341.0, 1.0, reason) == D));
  BOOST_TEST(reason == "loss 341 exceeded train.divergence_factor 20 x the reference loss 17");
  DivergenceState larger;
  larger.initial_loss = 1.0;
  BOOST_TEST((judge_step({20.0, false, 5}, larger, 2.5, 1.0, reason) == U));
  BOOST_TEST(larger.first_loss == 2.5);
}

BOOST_AUTO_TEST_SUITE_END()
