// panel_gemm's register tiles measured, not guessed: GFLOP/s of one thread on the products of
// the MLP 784-512-512-10 step at batch 32 (bench/run_mlp_bench.sh), the split a 2-thread step
// gives each thread, beside OpenBLAS's sgemm on the same operands. bench/panel_gemm_tiles.sh
// compiles core/panel_gemm_isa.cpp into this driver once per ISA and tile.
#include <cstdio>
#include <cstring>
#include <random>
#include <vector>

#include "bench/harness.hpp"

namespace lbt::LBT_ISA_NS {
void panel_gemm(int rows, int cols, int K, const float* a, std::ptrdiff_t a_row,
                std::ptrdiff_t a_k, const float* b, std::ptrdiff_t ldb, float* c,
                std::ptrdiff_t ldc, bool accumulate);
}

extern "C" void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha,
                            const float* a, int lda, const float* b, int ldb, float beta, float* c,
                            int ldc);
extern "C" void openblas_set_num_threads(int);

namespace {

struct Product {
  const char* what;
  int rows, cols, K;
  bool a_transposed;  // A stored [K][rows] (a_row = 1) rather than [rows][K]
};

// Linear::forward_panel, backward's dW and dx at batch 32 (columns padded to 16), per thread.
const Product kProducts[] = {{"fc1 y^T = W x^T", 256, 32, 784, false},
                             {"fc2 y^T = W x^T", 256, 32, 512, false},
                             {"fc1 dW = dy^T x", 256, 784, 32, true},
                             {"fc2 dW = dy^T x", 256, 512, 32, true},
                             {"fc2 dx = dy W", 32, 256, 512, false}};

std::vector<float> random_vector(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  const int reps = argc > 1 ? std::atoi(argv[1]) : 200;
  openblas_set_num_threads(1);
  for (const Product& p : kProducts) {
    const auto a = random_vector(static_cast<std::size_t>(p.rows) * p.K, 1);
    const auto b = random_vector(static_cast<std::size_t>(p.K) * p.cols, 2);
    std::vector<float> c(static_cast<std::size_t>(p.rows) * p.cols);
    const std::ptrdiff_t a_row = p.a_transposed ? 1 : p.K, a_k = p.a_transposed ? p.rows : 1;
    const double flops = 2.0 * p.rows * p.cols * p.K;
    auto time = [&](auto&& f) {
      std::vector<double> gflops;
      for (int round = 0; round < 7; ++round) {
        f();
        const auto t0 = lbt::bench::Clock::now();
        for (int r = 0; r < reps; ++r) f();
        gflops.push_back(flops * reps / lbt::bench::seconds_since(t0) / 1e9);
      }
      return lbt::bench::stats_of(gflops);
    };
    const auto hand = time([&] {
      lbt::LBT_ISA_NS::panel_gemm(p.rows, p.cols, p.K, a.data(), a_row, a_k, b.data(), p.cols,
                                  c.data(), p.cols, false);
    });
    const auto blas = time([&] {
      cblas_sgemm(101, p.a_transposed ? 112 : 111, 111, p.rows, p.cols, p.K, 1.0f, a.data(),
                  p.a_transposed ? p.rows : p.K, b.data(), p.cols, 0.0f, c.data(), p.cols);
    });
    std::printf("%s,%s,%d,%d,%d,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n", LBT_TILE_NAME, p.what, p.rows,
                p.cols, p.K, hand.median, hand.min, hand.max, blas.median, blas.min, blas.max);
  }
  return 0;
}
