// Cost of one LR evaluation of composed schedules (warmup + cosine, and warmup-stable-decay),
// built exactly as schedules/from_config.cpp builds them: join(warmup, decay) at unit peak,
// then scaled. Goal: well under 1 microsecond (the trainer calls it once per step).
// Usage: bench_schedule_eval [evaluations per schedule, default 20000000]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "schedules/decay.hpp"
#include "schedules/schedule.hpp"
#include "schedules/warmup.hpp"

using namespace lbt::schedules;

namespace {
double time_ns_per_eval(const Schedule& lr, std::int64_t total_steps, std::int64_t evals,
                        double& sink) {
  double sum = 0.0;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::int64_t i = 0; i < evals; ++i) sum += lr(i % total_steps);  // every phase visited
  const auto t1 = std::chrono::steady_clock::now();
  sink += sum;
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / double(evals);
}
}  // namespace

int main(int argc, char** argv) {
  const std::int64_t evals = argc > 1 ? std::atoll(argv[1]) : 20'000'000;
  const std::int64_t W = 500, total = 10'000;
  const double peak = 0.4;
  const Schedule warmup_cosine =
      scaled(join({warmup_linear(0.0, 1.0, W), cosine_decay(1.0, total - W, 0.01)}, {W}), peak);
  const Schedule warmup_wsd = scaled(
      join({warmup_linear(0.0, 1.0, W), wsd(1.0, 7600, 1900, 0.0, CooldownShape::kLinear)}, {W}),
      peak);
  const Schedule bare_constant = constant(peak);

  double sink = 0.0;
  time_ns_per_eval(warmup_cosine, total, evals / 10, sink);  // warm up caches and clocks
  const double cosine_ns = time_ns_per_eval(warmup_cosine, total, evals, sink);
  const double wsd_ns = time_ns_per_eval(warmup_wsd, total, evals, sink);
  const double constant_ns = time_ns_per_eval(bare_constant, total, evals, sink);
  std::printf("schedule,ns_per_eval\n");
  std::printf("warmup+cosine,%.2f\n", cosine_ns);
  std::printf("warmup+wsd,%.2f\n", wsd_ns);
  std::printf("constant (std::function floor),%.2f\n", constant_ns);
  std::fprintf(stderr, "(checksum %.6g over %lld evaluations each)\n", sink,
               static_cast<long long>(evals));
  const bool ok = cosine_ns < 1000.0 && wsd_ns < 1000.0;
  return ok ? 0 : 1;
}
