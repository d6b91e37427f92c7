// Decay shapes. Each starts at `peak` on its own step 0 (join shifts it to where the warmup
// ends) and is a complete schedule by itself. Step and multi-step: Goyal et al. 2017 / He et al.
// 2016; exponential and inverse-time as in TensorFlow's tf.keras.optimizers.schedules;
// polynomial: You et al. 2017 (LARS, arXiv:1708.03888, power 2); cosine: Loshchilov & Hutter
// 2017, arXiv:1608.03983 (no restarts); inverse sqrt: Vaswani et al. 2017, arXiv:1706.03762,
// eq. 3; warmup-stable-decay: Hu et al. 2024 (MiniCPM, arXiv:2404.06395), Hägele et al. 2024
// (arXiv:2405.18392, "1-sqrt" cooldown).
#pragma once
#include <cstdint>
#include <vector>

#include "schedules/schedule.hpp"

namespace lbt::schedules {

/// lr(t) = from + (to - from) * t / steps for t < steps, then `to`. steps > 0.
Schedule linear(double from, double to, std::int64_t steps);

/// lr(t) = peak * gamma^floor(t / every). every > 0, gamma > 0.
Schedule step_decay(double peak, double gamma, std::int64_t every);

/// lr(t) = peak * gamma^(number of milestones <= t). Milestones > 0, strictly increasing.
Schedule multistep_decay(double peak, double gamma, std::vector<std::int64_t> milestones);

/// lr(t) = peak * gamma^(t / every), with floor(t / every) when staircase. every > 0, gamma > 0.
Schedule exponential_decay(double peak, double gamma, std::int64_t every, bool staircase);

/// lr(t) = peak / (1 + rate * t / every), with floor(t / every) when staircase. rate >= 0.
Schedule inverse_time_decay(double peak, double rate, std::int64_t every, bool staircase);

/// lr(t) = end + (peak - end) * (1 - t / steps)^power for t < steps, then end. power > 0.
Schedule polynomial_decay(double peak, double end, std::int64_t steps, double power);

/// lr(t) = end + (peak - end) * (1 + cos(pi * t / steps)) / 2 for t < steps, then end,
/// with end = final_frac * peak. steps > 0, final_frac >= 0.
Schedule cosine_decay(double peak, std::int64_t steps, double final_frac = 0.0);

/// lr(t) = peak / sqrt(1 + t / timescale). With timescale = warmup W and t = step - W this is
/// Vaswani's peak * sqrt(W / step). timescale > 0.
Schedule inverse_sqrt_decay(double peak, double timescale);

enum class CooldownShape { kLinear, kCosine, kOneMinusSqrt };

/// Warmup-stable-decay's tail: peak for t < stable_steps, then a cooldown of cooldown_steps to
/// final_frac * peak (shape: linear, cosine, or 1 - sqrt), then hold. cooldown_steps > 0.
Schedule wsd(double peak, std::int64_t stable_steps, std::int64_t cooldown_steps,
             double final_frac, CooldownShape shape);

}  // namespace lbt::schedules
