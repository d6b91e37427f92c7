// Launchers of the fused optimizer kernels (kernels.cu) over the flat buffers on the GPU. Each
// thread block updates one chunk (a piece of one segment); per-segment scalars arrive from the
// host, computed there as the CPU optimizers compute them; the per-element arithmetic is
// optim/update_rules.hpp's, the CPU kernels' own. Norm passes write K double partial sums per
// chunk, which the host adds per segment in chunk order (a fixed order: runs repeat exactly).
// Device pointers throughout; no CUDA types, so g++ callers include it.
#pragma once
#include <cstddef>
#include <cstdint>

#include "optim/update_rules.hpp"

namespace lbt::optim::cuda {

struct DeviceChunk {
  std::int32_t segment;
  std::int64_t offset, end;  // [offset, end) in the flat buffer
};

// Up to four floats per segment, their meaning each launcher's.
struct SegmentScalars {
  float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
};

struct ChunkLaunch {
  const DeviceChunk* chunks;  // device
  std::int64_t num_chunks;
  const SegmentScalars* scalars;  // device, per segment
};

// SGD with g' = scale (g + l2 w): scalars (scale, l2). momentum == nullptr: plain SGD.
void sgd(const ChunkLaunch& c, float* w, const float* g, float* momentum,
         const rules::SgdCoefficients& k);
// Adam/AdamW with g' = scale (g + l2 w) and decoupled decay wd: scalars (scale, l2, wd).
void adam(const ChunkLaunch& c, float* w, const float* g, float* m, float* v, float lr,
          const rules::AdamCoefficients& k);
// |w|^2, |g|^2, |g + beta w|^2 per chunk into parts[3 * chunk]: scalars (beta, ., ., trusted).
void lars_norms(const ChunkLaunch& c, const float* w, const float* g, double* parts);
// v = mu v + a (g + beta w); w -= c v: scalars (beta, a, c). momentum == nullptr: no momentum.
void lars(const ChunkLaunch& c, float* w, const float* g, float* momentum, float one_minus_mu);
// LAMB pass 1: moments everywhere; trusted segments (s3 != 0) write |w|^2, |u|^2 into
// parts[2 * chunk], the others take their whole AdamW step: scalars (lambda, ., ., trusted).
void lamb_moments(const ChunkLaunch& c, float* w, const float* g, float* m, float* v, float lr,
                  const rules::AdamCoefficients& k, double* parts);
// LAMB pass 2 on trusted segments: w -= size u: scalars (lambda, size, ., trusted).
void lamb_update(const ChunkLaunch& c, float* w, const float* m, const float* v,
                 const rules::AdamCoefficients& k);

}  // namespace lbt::optim::cuda
