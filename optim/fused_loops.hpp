// The element loops of the fused optimizer steps (sgd.cpp, adam.cpp, lars.cpp, larc.cpp,
// lamb.cpp), compiled once per CPU path
// (fused_loops_isa.cpp, cmake/isa_sources.cmake) and called on the chosen copy: compiled for
// the baseline alone, SGD's loop ran four floats to an instruction and was 40% of a batch-32
// MLP step on the AVX-512 machine (perf, 2026-11-26). Each applies its rule of update_rules.hpp
// to n consecutive elements; optim/ compiles without contraction into fused multiply-adds, so
// every path computes the same bits as the others and the GPU.
#pragma once
#include <array>
#include <cstddef>

#include "optim/update_rules.hpp"

namespace lbt::optim::loops {

// w -= lr g', g' = scale (g + l2 w).
void sgd_plain(float* w, const float* g, std::size_t n, float scale, float l2, float lr);

// rules::sgd_momentum on g' = scale (g + l2 w).
void sgd_momentum(float* w, float* buf, const float* g, std::size_t n, float scale, float l2,
                  const rules::SgdCoefficients& k);

// rules::adam on g' = scale (g + l2 w), with decoupled decay wd.
void adam(float* w, float* m, float* v, const float* g, std::size_t n, float scale, float l2,
          float wd, float lr, const rules::AdamCoefficients& k);

// {|w|^2, |g|^2, |g + beta w|^2} in double (LARS's and LARC's norms), in fixed lanes, so every
// path sums in the same order.
std::array<double, 3> weight_and_grad_norms(const float* w, const float* g, std::size_t n,
                                            double beta);

// rules::lars_plain and rules::lars_momentum.
void lars_plain(float* w, const float* g, std::size_t n, float beta, float a, float c);
void lars_momentum(float* w, float* v, const float* g, std::size_t n, float beta, float a, float c,
                   float one_minus_mu);

// LAMB's first pass on a trust-ratio segment: the moments, then {|w|^2, |u|^2} with u the Adam
// direction plus lambda w (fixed lanes as above).
std::array<double, 2> lamb_moments_and_norms(const float* w, float* m, float* v, const float* g,
                                             std::size_t n, float lambda,
                                             const rules::AdamCoefficients& k);

// LAMB's second pass: w -= size u.
void lamb_update(float* w, const float* m, const float* v, std::size_t n, float lambda, float size,
                 const rules::AdamCoefficients& k);

}  // namespace lbt::optim::loops
