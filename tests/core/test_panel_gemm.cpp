// panel_gemm against a written-out triple loop in double: both ways of reading A (rows apart by
// a_row with a contiguous inner dimension, and transposed: a_row = 1), 16- and 32-wide column
// blocks, row counts that are not multiples of the register block, padded leading dimensions,
// accumulation into C, and A rows exactly 16 apart with K = 16 (the Winograd layout of
// 16-channel layers, which takes a kernel of its own); on every CPU path the machine has, whose
// register tiles differ.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "core/panel_gemm.hpp"
#include "support/cpu_paths.hpp"

namespace {

std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace

namespace {

void check_panel_gemm() {
  struct Case {
    int rows, cols, K;
    bool transposed_a, accumulate;
    int a_row = 0;  // A's row stride when not transposed; 0: K + 3
  };
  const Case cases[] = {{49, 64, 32, false, false},    {49, 64, 32, false, true},
                        {13, 48, 7, true, false},      {32, 16, 64, false, true},
                        {1, 32, 5, true, true},        {100, 80, 16, true, false},
                        {37, 96, 3136, false, false},  {64, 16, 16, false, false, 16},
                        {64, 16, 16, false, true, 16}, {35, 16, 16, false, true, 16},
                        {7, 48, 19, false, true},      {5, 16, 33, true, false}};
  for (const Case& c : cases) {
    BOOST_TEST_CONTEXT(c.rows << "x" << c.cols << "x" << c.K << (c.transposed_a ? " A^T" : "")
                              << (c.accumulate ? " +=" : "")) {
      // A stored [rows][K + 3] or, transposed, [K][rows + 5]; B [K][cols + 16]; C [rows][cols +
      // 16].
      const std::ptrdiff_t a_row = c.transposed_a ? 1 : (c.a_row > 0 ? c.a_row : c.K + 3);
      const std::ptrdiff_t a_k = c.transposed_a ? c.rows + 5 : 1;
      const std::ptrdiff_t ldb = c.cols + 16, ldc = c.cols + 16;
      const auto a =
          random_vector(static_cast<std::size_t>(c.transposed_a ? c.K * a_k : c.rows * a_row), 1);
      const auto b = random_vector(static_cast<std::size_t>(c.K * ldb), 2);
      auto out = random_vector(static_cast<std::size_t>(c.rows * ldc), 3);
      const auto before = out;
      lbt::panel_gemm(c.rows, c.cols, c.K, a.data(), a_row, a_k, b.data(), ldb, out.data(), ldc,
                      c.accumulate);
      std::size_t bad = 0;
      for (int i = 0; i < c.rows; ++i) {
        for (int j = 0; j < ldc; ++j) {
          const std::size_t at = static_cast<std::size_t>(i * ldc + j);
          if (j >= c.cols) {  // past the columns: untouched
            if (out[at] != before[at] && ++bad <= 3)
              BOOST_ERROR("wrote past the columns at " << i << "," << j);
            continue;
          }
          double want = c.accumulate ? before[at] : 0.0, scale = std::abs(want);
          for (int k = 0; k < c.K; ++k) {
            const double term =
                static_cast<double>(a[static_cast<std::size_t>(i * a_row + k * a_k)]) *
                b[static_cast<std::size_t>(k * ldb + j)];
            want += term;
            scale += std::abs(term);
          }
          if (std::abs(out[at] - want) > 1e-5 * scale + 1e-6 && ++bad <= 3)
            BOOST_ERROR("C[" << i << "][" << j << "] = " << out[at] << ", want " << want);
        }
      }
      BOOST_TEST(bad == 0u);
    }
  }
}

}  // namespace

BOOST_AUTO_TEST_CASE(panel_gemm_equals_a_written_out_product_on_every_cpu_path) {
  lbt::test::on_every_cpu_path(check_panel_gemm);
}
