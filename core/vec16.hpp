// 16 floats as one value: one AVX-512 register, two AVX2 ones, or four SSE ones (GCC vector
// extensions), with the loads, stores and lane shuffles the layers' kernels share.
//
// These inline functions are compiled differently in each ISA's copy of the kernels
// (cmake/isa_sources.cmake). So that the linker never merges an AVX-512 copy into code that
// runs on another CPU, everything here sits in an inline namespace named after the vector ISA
// the including file is compiled for; headers with inline functions on v16 use the same
// namespace (LBT_VEC_BEGIN / LBT_VEC_END).
#pragma once
// 64-byte vectors passed to and returned from inline functions draw GCC's note that their ABI
// changed in GCC 4.6 (or differs without AVX-512); none of them crosses a library boundary.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <cstring>
#include <utility>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif
// GCC 12's AVX-512 intrinsics (_mm512_broadcast_f32x4, _mm512_permute_ps, _mm512_alignr_epi32,
// _mm512_castps512_ps256, ...) start from _mm512_undefined_*(), a self-initialised register that
// -Wmaybe-uninitialized reports wherever a kernel inlines them (GCC bug 105593, fixed in GCC 13):
// the value is overwritten whole, and the warning fills CI's log with nothing about lbt's code.
#if defined(__AVX512F__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#if defined(__AVX512F__)
#define LBT_VEC_ISA vec_avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define LBT_VEC_ISA vec_avx2
#else
#define LBT_VEC_ISA vec_baseline
#endif
#define LBT_VEC_BEGIN inline namespace LBT_VEC_ISA {
#define LBT_VEC_END }

namespace lbt::vec {
LBT_VEC_BEGIN

#if defined(__AVX512F__)
typedef float v16 __attribute__((vector_size(64)));
typedef int v16i __attribute__((vector_size(64)));
#else
// Without AVX-512 no register holds a 64-byte vector, and GCC keeps such a vector extension
// value in memory: every operation loads and stores (panel_gemm ran at 13 GFLOP/s on the AVX2
// path). So there a v16 is 16 / kLanes vectors of the widest size the target has, side by side,
// with the operators the kernels use; GCC keeps each part in a register.
#if defined(__AVX2__)
inline constexpr int kLanes = 8;
#else
inline constexpr int kLanes = 4;
#endif
inline constexpr int kParts = 16 / kLanes;
typedef float vf __attribute__((vector_size(4 * kLanes)));
typedef int vi __attribute__((vector_size(4 * kLanes)));
typedef float float_alias __attribute__((may_alias));
typedef int int_alias __attribute__((may_alias));

struct v16 {
  vf p[kParts];
  float& operator[](int i) { return reinterpret_cast<float_alias*>(p)[i]; }
  float operator[](int i) const { return reinterpret_cast<const float_alias*>(p)[i]; }
};
struct v16i {
  vi p[kParts];
  int& operator[](int i) { return reinterpret_cast<int_alias*>(p)[i]; }
  int operator[](int i) const { return reinterpret_cast<const int_alias*>(p)[i]; }
};

// Part by part: r.p[k] = EXPR for every part k.
#define LBT_V16_PARTS(T, EXPR)                      \
  T r;                                              \
  for (int k = 0; k < kParts; ++k) r.p[k] = (EXPR); \
  return r;
#define LBT_V16_ARITHMETIC(OP)                  \
  inline v16 operator OP(v16 a, v16 b) {        \
    LBT_V16_PARTS(v16, a.p[k] OP b.p[k])        \
  }                                             \
  inline v16 operator OP(v16 a, float b) {      \
    LBT_V16_PARTS(v16, a.p[k] OP b)             \
  }                                             \
  inline v16 operator OP(float a, v16 b) {      \
    LBT_V16_PARTS(v16, a OP b.p[k])             \
  }                                             \
  inline v16& operator OP##=(v16& a, v16 b) {   \
    return a = a OP b;                          \
  }                                             \
  inline v16& operator OP##=(v16& a, float b) { \
    return a = a OP b;                          \
  }
LBT_V16_ARITHMETIC(+)
LBT_V16_ARITHMETIC(-)
LBT_V16_ARITHMETIC(*)
LBT_V16_ARITHMETIC(/)
#undef LBT_V16_ARITHMETIC
inline v16 operator-(v16 a){LBT_V16_PARTS(v16, -a.p[k])}

#define LBT_V16_COMPARE(OP)                 \
  inline v16i operator OP(v16 a, v16 b) {   \
    LBT_V16_PARTS(v16i, a.p[k] OP b.p[k])   \
  }                                         \
  inline v16i operator OP(v16 a, float b) { \
    LBT_V16_PARTS(v16i, a.p[k] OP b)        \
  }                                         \
  inline v16i operator OP(v16i a, int b) {  \
    LBT_V16_PARTS(v16i, a.p[k] OP b)        \
  }
LBT_V16_COMPARE(<) LBT_V16_COMPARE(>) LBT_V16_COMPARE(==)
#undef LBT_V16_COMPARE
    inline v16i
    operator&(v16i a, v16i b) {
  LBT_V16_PARTS(v16i, a.p[k] & b.p[k])
}
inline v16i operator|(v16i a, v16i b) {
  LBT_V16_PARTS(v16i, a.p[k] | b.p[k])
}
inline v16i operator~(v16i a) {
  LBT_V16_PARTS(v16i, ~a.p[k])
}
#undef LBT_V16_PARTS
#endif

// Lane numbers: `kLaneIndex < n` selects the first n lanes.
#if defined(__AVX512F__)
inline constexpr v16i kLaneIndex = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
#elif defined(__AVX2__)
inline constexpr v16i kLaneIndex = {{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}}};
#else
inline constexpr v16i kLaneIndex = {{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}, {12, 13, 14, 15}}};
#endif

#if defined(__AVX512F__)
inline v16 load(const float* p) {
  v16 v;
  std::memcpy(&v, p, sizeof v);  // an unaligned load
  return v;
}
inline void store(float* p, v16 v) {
  std::memcpy(p, &v, sizeof v);
}
#else
// Part by part, so that each part is one register load or store (one copy of the whole struct
// went through the stack).
inline v16 load(const float* p) {
  v16 v;
  for (int k = 0; k < kParts; ++k) std::memcpy(&v.p[k], p + k * kLanes, sizeof v.p[k]);
  return v;
}
inline void store(float* p, v16 v) {
  for (int k = 0; k < kParts; ++k) std::memcpy(p + k * kLanes, &v.p[k], sizeof v.p[k]);
}
#endif

// The first n (<= 16) floats at p, zeros after; nothing past p + n is read.
inline v16 load_first(const float* p, int n) {
  if (n == 16) return load(p);
#if defined(__AVX512F__)
  return reinterpret_cast<v16>(_mm512_maskz_loadu_ps(static_cast<__mmask16>((1u << n) - 1), p));
#elif defined(__AVX2__)
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i low = _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lanes);
  const __m256i high = _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8), lanes);
  return v16{{_mm256_maskload_ps(p, low), _mm256_maskload_ps(p + 8, high)}};
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
#elif defined(__AVX2__)
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  _mm256_maskstore_ps(p, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lanes), v.p[0]);
  _mm256_maskstore_ps(p + 8, _mm256_cmpgt_epi32(_mm256_set1_epi32(n - 8), lanes), v.p[1]);
#else
  for (int i = 0; i < n; ++i) p[i] = v[i];
#endif
}

// a * b + c rounded once, lane by lane (as std::fma).
inline v16 fma(v16 a, v16 b, v16 c) {
#if defined(__AVX512F__)
  return reinterpret_cast<v16>(_mm512_fmadd_ps(
      reinterpret_cast<__m512>(a), reinterpret_cast<__m512>(b), reinterpret_cast<__m512>(c)));
#elif defined(__AVX2__) && defined(__FMA__)
  return v16{{_mm256_fmadd_ps(a.p[0], b.p[0], c.p[0]), _mm256_fmadd_ps(a.p[1], b.p[1], c.p[1])}};
#else
  v16 r;
  for (int i = 0; i < 16; ++i) r[i] = __builtin_fmaf(a[i], b[i], c[i]);
  return r;
#endif
}

// Reinterprets the bits (masks from comparisons select lanes with &).
#if defined(__AVX512F__)
inline v16 as_float(v16i v) {
  return reinterpret_cast<v16>(v);
}
inline v16i as_int(v16 v) {
  return reinterpret_cast<v16i>(v);
}
#else
inline v16 as_float(v16i v) {
  v16 r;
  for (int k = 0; k < kParts; ++k) r.p[k] = reinterpret_cast<vf>(v.p[k]);
  return r;
}
inline v16i as_int(v16 v) {
  v16i r;
  for (int k = 0; k < kParts; ++k) r.p[k] = reinterpret_cast<vi>(v.p[k]);
  return r;
}
#endif

#if defined(__AVX512F__)
namespace detail {
template <std::size_t... I>
constexpr v16i even_lanes(std::index_sequence<I...>) {  // of two vectors: 0, 2, ..., 30
  return v16i{static_cast<int>(2 * I)...};
}
template <std::size_t... I>
constexpr v16i interleave_lanes(int half, std::index_sequence<I...>) {  // a0 b0 a1 b1 ...
  return v16i{static_cast<int>((I + 16 * half) / 2 + ((I % 2) ? 16 : 0))...};
}
}  // namespace detail

// The even (0, 2, ..., 30) and odd lanes of the 32 floats lo, hi.
inline v16 even_of(v16 lo, v16 hi) {
  constexpr v16i even = detail::even_lanes(std::make_index_sequence<16>{});
  return __builtin_shuffle(lo, hi, even);
}
inline v16 odd_of(v16 lo, v16 hi) {
  constexpr v16i odd = detail::even_lanes(std::make_index_sequence<16>{}) + 1;
  return __builtin_shuffle(lo, hi, odd);
}
// a0 b0 a1 b1 ... a7 b7 (low) and a8 b8 ... a15 b15 (high): the inverse of even_of / odd_of.
inline v16 interleave_low(v16 a, v16 b) {
  constexpr v16i low = detail::interleave_lanes(0, std::make_index_sequence<16>{});
  return __builtin_shuffle(a, b, low);
}
inline v16 interleave_high(v16 a, v16 b) {
  constexpr v16i high = detail::interleave_lanes(1, std::make_index_sequence<16>{});
  return __builtin_shuffle(a, b, high);
}

// r[k][l] <- r[l][k] for a 16 x 16 block: four stages that swap the off-diagonal D x D blocks
// of every 2D x 2D block (D = 8, 4, 2, 1), one two-source permute per row and stage.
namespace detail {
template <int D, std::size_t... I>
constexpr v16i swap_low(std::index_sequence<I...>) {  // row i: columns with bit D from row i + D
  return v16i{((I & D) ? static_cast<int>(16 + I - D) : static_cast<int>(I))...};
}
template <int D, std::size_t... I>
constexpr v16i swap_high(std::index_sequence<I...>) {  // row i + D: the others from row i
  return v16i{((I & D) ? static_cast<int>(16 + I) : static_cast<int>(I + D))...};
}
template <int D>
inline void transpose_stage(v16* r) {
  constexpr v16i low = swap_low<D>(std::make_index_sequence<16>{});
  constexpr v16i high = swap_high<D>(std::make_index_sequence<16>{});
  for (int i = 0; i < 16; ++i) {
    if (i & D) continue;
    const v16 a = r[i], b = r[i + D];
    r[i] = __builtin_shuffle(a, b, low);
    r[i + D] = __builtin_shuffle(a, b, high);
  }
}
}  // namespace detail

inline void transpose16(v16* r) {
  detail::transpose_stage<8>(r);
  detail::transpose_stage<4>(r);
  detail::transpose_stage<2>(r);
  detail::transpose_stage<1>(r);
}

#else
// The same lane moves element by element (no 64-byte shuffle without AVX-512).
inline v16 even_of(v16 lo, v16 hi) {
  v16 r;
  for (int i = 0; i < 8; ++i) r[i] = lo[2 * i], r[i + 8] = hi[2 * i];
  return r;
}
inline v16 odd_of(v16 lo, v16 hi) {
  v16 r;
  for (int i = 0; i < 8; ++i) r[i] = lo[2 * i + 1], r[i + 8] = hi[2 * i + 1];
  return r;
}
inline v16 interleave_low(v16 a, v16 b) {
  v16 r;
  for (int i = 0; i < 8; ++i) r[2 * i] = a[i], r[2 * i + 1] = b[i];
  return r;
}
inline v16 interleave_high(v16 a, v16 b) {
  v16 r;
  for (int i = 0; i < 8; ++i) r[2 * i] = a[i + 8], r[2 * i + 1] = b[i + 8];
  return r;
}
inline void transpose16(v16* r) {
  float t[16][16];
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) t[j][i] = r[i][j];
  std::memcpy(r, t, sizeof t);
}
#endif

LBT_VEC_END
}  // namespace lbt::vec
