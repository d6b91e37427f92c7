// The MLP 784-512-512-10's three Linear layers, forward and backward (the step's arithmetic
// without the ReLUs, loss and optimizer), by lbt's Linear (panel_gemm at small batches, else
// OpenBLAS: nn/cpu/linear.cpp) beside the same products as three GEMMs per layer in OpenBLAS and
// in oneDNN (dnnl_sgemm, its runtime-dispatched GEMM). Issue "Builds and runs fast on every CPU":
// keep a hand-written kernel only where it wins. Samples/s, median [min-max] of 0.2 s windows.
// Run once as is and once with LBT_CPU=avx2 OPENBLAS_CORETYPE=Haswell ONEDNN_MAX_CPU_ISA=AVX2
// (bench/run_gemm_libraries.sh) to compare the AVX2 paths on an AVX-512 machine.
//   usage: bench_gemm_libraries [--batches 32,128,512,2048] [--threads 2] [--seconds 1]
#include <dnnl.h>
#include <omp.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/harness.hpp"
#include "core/gemm.hpp"
#include "core/rng.hpp"
#include "core/tensor.hpp"
#include "nn/backend.hpp"
#include "nn/model.hpp"

using namespace lbt;

namespace {

constexpr std::int64_t kDims[] = {784, 512, 512, 10};
constexpr int kLayers = 3;

using Gemm = void (*)(bool ta, bool tb, int m, int n, int k, float beta, const float* a, int lda,
                      const float* b, int ldb, float* c, int ldc);

void openblas_gemm(bool ta, bool tb, int m, int n, int k, float beta, const float* a, int lda,
                   const float* b, int ldb, float* c, int ldc) {
  sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
}

void onednn_gemm(bool ta, bool tb, int m, int n, int k, float beta, const float* a, int lda,
                 const float* b, int ldb, float* c, int ldc) {
  // dnnl_sgemm is row-major, as lbt's sgemm.
  if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc) !=
      dnnl_success)
    std::abort();
}

// One layer's buffers: weights [out, in], bias, their gradients, its input and output and the
// gradients there.
struct LayerBuffers {
  std::int64_t in, out;
  AlignedBuffer w, b, dw, db, x, y, dy, dx;
};

// Forward y = x W^T + b, backward dW = dy^T x, db = column sums of dy, dx = dy W (not for the
// first layer), as lbt's Linear computes them.
void library_step(Gemm gemm, std::vector<LayerBuffers>& L, int batch) {
  for (LayerBuffers& l : L) {
    const int I = static_cast<int>(l.in), O = static_cast<int>(l.out);
    for (int r = 0; r < batch; ++r)
      std::copy(l.b.data(), l.b.data() + O, l.y.data() + static_cast<std::size_t>(r) * O);
    gemm(false, true, batch, O, I, 1.0f, l.x.data(), I, l.w.data(), I, l.y.data(), O);
  }
  for (int i = kLayers - 1; i >= 0; --i) {
    LayerBuffers& l = L[static_cast<std::size_t>(i)];
    const int I = static_cast<int>(l.in), O = static_cast<int>(l.out);
    gemm(true, false, O, I, batch, 0.0f, l.dy.data(), O, l.x.data(), I, l.dw.data(), I);
    std::fill(l.db.data(), l.db.data() + O, 0.0f);
    for (int r = 0; r < batch; ++r)
      for (int o = 0; o < O; ++o) l.db[o] += l.dy[static_cast<std::size_t>(r) * O + o];
    if (i > 0) gemm(false, false, batch, I, O, 0.0f, l.dy.data(), O, l.w.data(), I, l.dx.data(), I);
  }
}

std::vector<LayerBuffers> buffers(int batch, Rng& rng) {
  std::normal_distribution<float> normal;
  auto fill = [&](AlignedBuffer& buf, std::int64_t n) {
    buf.resize(static_cast<std::size_t>(n));
    for (std::int64_t k = 0; k < n; ++k) buf[k] = 0.05f * normal(rng);
  };
  std::vector<LayerBuffers> L(kLayers);
  for (int i = 0; i < kLayers; ++i) {
    LayerBuffers& l = L[static_cast<std::size_t>(i)];
    l.in = kDims[i], l.out = kDims[i + 1];
    fill(l.w, l.out * l.in), fill(l.b, l.out), fill(l.dw, l.out * l.in), fill(l.db, l.out);
    fill(l.x, batch * l.in), fill(l.y, batch * l.out), fill(l.dy, batch * l.out);
    fill(l.dx, batch * l.in);
  }
  return L;
}

}  // namespace

int main(int argc, char** argv) {
  const bench::Args args(argc, argv);
  const std::vector<std::int64_t> batches =
      bench::parse_list(args.get("--batches", "32,128,512,2048"));
  const int threads = static_cast<int>(args.get_int("--threads", 2));
  const bench::Windows windows{0.2, 3, 0.2, args.get_double("--seconds", 1.0)};
  set_num_threads(threads);
  omp_set_num_threads(threads);
  std::printf("impl,batch,samples_per_s,min,max\n");
  for (const std::int64_t batch64 : batches) {
    const int batch = static_cast<int>(batch64);
    Rng rng = make_rng(1, RngStream::kInit);
    std::vector<LayerBuffers> L = buffers(batch, rng);
    std::vector<std::unique_ptr<nn::Layer>> layers;
    for (int i = 0; i < kLayers; ++i) {
      layers.push_back(nn::cpu_backend().linear(kDims[i], kDims[i + 1], nn::InitScheme::kHe, true));
    }
    nn::Model model;
    for (auto& layer : layers) model.add(std::move(layer));
    model.build(rng);
    const auto& built = model.layers();
    const auto lbt_step = [&](std::int64_t) {
      for (int i = 0; i < kLayers; ++i)
        built[i]->forward(L[i].x.data(), L[i].y.data(), batch, true);
      for (int i = kLayers - 1; i >= 0; --i)
        built[i]->backward(L[i].x.data(), L[i].y.data(), L[i].dy.data(),
                           i > 0 ? L[i].dx.data() : nullptr, batch, false);
    };
    const auto report = [&](const char* impl, const bench::Stats& s) {
      std::printf("%s,%d,%.0f,%.0f,%.0f\n", impl, batch, s.median, s.min, s.max);
      std::fflush(stdout);
    };
    report("lbt_linear", bench::samples_per_second(lbt_step, batch, windows));
    report("openblas_gemm",
           bench::samples_per_second([&](std::int64_t) { library_step(openblas_gemm, L, batch); },
                                     batch, windows));
    report("onednn_gemm",
           bench::samples_per_second([&](std::int64_t) { library_step(onednn_gemm, L, batch); },
                                     batch, windows));
  }
}
