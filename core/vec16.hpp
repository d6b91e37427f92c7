// 16 floats as one value: one AVX-512 register, or two AVX2 ones where that is the widest the
// CPU has (GCC vector extensions), with the loads and stores the layers' kernels share.
#pragma once
#include <cstring>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

namespace lbt::vec {

typedef float v16 __attribute__((vector_size(64)));
typedef int v16i __attribute__((vector_size(64)));

inline v16 load(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof v);  // an unaligned load
  return v;
}
inline void store(float* p, v16 v) {
  std::memcpy(p, &v, sizeof v);
}

// The first n (<= 16) floats at p, zeros after; nothing past p + n is read.
inline v16 load_first(const float* p, int n) {
  if (n == 16) return load(p);
#if defined(__AVX512F__)
  return reinterpret_cast<v16>(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p));
#else
  v16 v{};
  for (int i = 0; i < n; ++i) v[i] = p[i];
  return v;
#endif
}

// The first n (<= 16) lanes of v to p; nothing past p + n is written.
inline void store_first(float* p, v16 v, int n) {
  if (n == 16) return store(p, v);
#if defined(__AVX512F__)
  _mm512_mask_storeu_ps(p, static_cast<__mmask16>((1u << n) - 1), reinterpret_cast<__m512>(v));
#else
  for (int i = 0; i < n; ++i) p[i] = v[i];
#endif
}

// Reinterprets the bits (masks from comparisons select lanes with &).
inline v16 as_float(v16i v) {
  return reinterpret_cast<v16>(v);
}
inline v16i as_int(v16 v) {
  return reinterpret_cast<v16i>(v);
}

}  // namespace lbt::vec
