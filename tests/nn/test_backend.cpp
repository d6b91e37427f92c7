// The backend seam (nn/backend.hpp): a second backend is a class implementing Backend, here
// one that records what it is asked for and delegates to the CPU backend. Models built through
// it ask it for every layer, compute the same numbers as the CPU backend's models bit for bit,
// and report it as theirs; the CPU backend's primitives match sums in double.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/rng.hpp"
#include "nn/backend.hpp"
#include "nn/model.hpp"
#include "support/random.hpp"

using namespace lbt;

namespace {

class RecordingBackend final : public nn::Backend {
 public:
  mutable std::vector<std::string> calls;
  mutable std::vector<std::size_t> allocations;
  const nn::Backend& cpu = nn::cpu_backend();

  const char* name() const override { return "recording"; }
  bool host_memory() const override { return true; }
  AlignedBuffer allocate(std::size_t n) const override {
    allocations.push_back(n);
    return cpu.allocate(n);
  }
  void copy(std::span<const float> from, std::span<float> to) const override { cpu.copy(from, to); }
  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
            const float* b, int ldb, float beta, float* c, int ldc) const override {
    cpu.gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  std::unique_ptr<nn::Layer> linear(std::int64_t in, std::int64_t out, nn::InitScheme init,
                                    bool bias) const override {
    return record("linear", cpu.linear(in, out, init, bias));
  }
  std::unique_ptr<nn::Layer> conv2d(nn::Shape3 in, const nn::Conv2dOptions& o,
                                    nn::InitScheme init) const override {
    return record("conv2d", cpu.conv2d(in, o, init));
  }
  std::unique_ptr<nn::Layer> relu(std::int64_t features) const override {
    return record("relu", cpu.relu(features));
  }
  std::unique_ptr<nn::Layer> max_pool(nn::Shape3 in, std::int64_t k, std::int64_t s,
                                      bool relu) const override {
    return record(relu ? "max_pool+relu" : "max_pool", cpu.max_pool(in, k, s, relu));
  }
  std::unique_ptr<nn::Layer> avg_pool(nn::Shape3 in, std::int64_t k,
                                      std::int64_t s) const override {
    return record("avg_pool", cpu.avg_pool(in, k, s));
  }
  std::unique_ptr<nn::Layer> global_avg_pool(nn::Shape3 in) const override {
    return record("global_avg_pool", cpu.global_avg_pool(in));
  }
  std::unique_ptr<nn::Layer> batch_norm(nn::Shape3 s,
                                        const nn::BatchNormOptions& o) const override {
    return record(o.relu ? "batch_norm+relu" : "batch_norm", cpu.batch_norm(s, o));
  }
  std::unique_ptr<nn::Layer> dropout(std::int64_t features, double p) const override {
    return record("dropout", cpu.dropout(features, p));
  }
  std::unique_ptr<nn::Layer> residual(nn::Shape3 in, std::int64_t out, std::int64_t stride,
                                      nn::InitScheme init) const override {
    return record("residual", cpu.residual(in, out, stride, init));
  }
  double softmax_cross_entropy(const float* logits, const std::int32_t* labels, std::int64_t batch,
                               std::int64_t classes, float* dlogits, float scale,
                               std::int64_t* correct, double* row_losses) const override {
    calls.push_back("softmax_cross_entropy");
    return cpu.softmax_cross_entropy(logits, labels, batch, classes, dlogits, scale, correct,
                                     row_losses);
  }
  double half_squared_error(const float* pred, const float* target, std::int64_t batch,
                            std::int64_t dim, float* dpred, float scale) const override {
    calls.push_back("half_squared_error");
    return cpu.half_squared_error(pred, target, batch, dim, dpred, scale);
  }
  double sum_squares(std::span<const float> x) const override { return cpu.sum_squares(x); }
  double dot(std::span<const float> x, std::span<const float> y) const override {
    return cpu.dot(x, y);
  }

 private:
  std::unique_ptr<nn::Layer> record(const char* what, std::unique_ptr<nn::Layer> layer) const {
    calls.push_back(what);
    return layer;
  }
};

// Forward, loss and backward of one batch; returns the loss and leaves the gradients.
double loss_and_grads(nn::Model& model, const std::vector<float>& x,
                      const std::vector<std::int32_t>& labels, std::int64_t batch) {
  const float* logits = model.forward(x.data(), batch, true);
  const double loss = model.backend().softmax_cross_entropy(
      logits, labels.data(), batch, model.output_dim(), model.output_grad(), 1.0f / batch, nullptr);
  model.backward(x.data(), batch, false);
  return loss;
}

}  // namespace

BOOST_AUTO_TEST_CASE(models_ask_their_backend_for_every_layer) {
  RecordingBackend backend;
  auto cnn = nn::Model::from_spec("cnn:simple", nn::InitScheme::kHe, {1, 28, 28}, backend);
  const std::vector<std::string> simple_cnn = {"conv2d", "max_pool+relu", "conv2d", "max_pool+relu",
                                               "linear", "relu",          "linear"};
  BOOST_TEST(backend.calls == simple_cnn, boost::test_tools::per_element());
  BOOST_TEST(&cnn->backend() == &backend);

  backend.calls.clear();
  nn::Model::from_spec("resnet:8", nn::InitScheme::kHe, {3, 32, 32}, backend);
  const std::vector<std::string> resnet8 = {"conv2d",   "batch_norm+relu", "residual", "residual",
                                            "residual", "global_avg_pool", "linear"};
  BOOST_TEST(backend.calls == resnet8, boost::test_tools::per_element());
  BOOST_TEST(&nn::Model::from_spec("mlp:4-3", nn::InitScheme::kHe)->backend() ==
             &nn::cpu_backend());
}

BOOST_AUTO_TEST_CASE(a_model_through_another_backend_computes_the_cpu_backends_numbers) {
  RecordingBackend backend;
  const std::int64_t batch = 6;
  const std::vector<float> x = test::normal_vector(batch * 28 * 28, 21);
  std::vector<std::int32_t> labels(batch);
  for (std::int64_t i = 0; i < batch; ++i) labels[i] = static_cast<std::int32_t>(i % 10);
  auto ours = nn::Model::from_spec("cnn:simple", nn::InitScheme::kHe, {1, 28, 28}, backend);
  auto cpu = nn::Model::from_spec("cnn:simple", nn::InitScheme::kHe, {1, 28, 28});
  for (auto* model : {ours.get(), cpu.get()}) {
    Rng rng = make_rng(4, RngStream::kInit);
    model->build(rng);
  }
  backend.calls.clear();
  BOOST_TEST(loss_and_grads(*ours, x, labels, batch) == loss_and_grads(*cpu, x, labels, batch));
  BOOST_TEST(backend.calls == std::vector<std::string>{"softmax_cross_entropy"},
             boost::test_tools::per_element());
  const auto a = ours->store().grads(), b = cpu->store().grads();
  BOOST_TEST(std::vector<float>(a.begin(), a.end()) == std::vector<float>(b.begin(), b.end()),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(a_model_allocates_its_buffers_on_its_backend) {
  RecordingBackend backend;
  auto model = nn::Model::from_spec("mlp:4-8-3", nn::InitScheme::kHe, {}, backend);
  Rng rng = make_rng(1, RngStream::kInit);
  model->build(rng);
  const std::size_t n = model->store().num_params();
  BOOST_TEST(backend.allocations == (std::vector<std::size_t>{n, n}),  // parameters, gradients
             boost::test_tools::per_element());
  backend.allocations.clear();
  model->reserve(5);  // each layer's activation and its gradient: 8, 8 (ReLU), 3 per example
  BOOST_TEST(backend.allocations == (std::vector<std::size_t>{40, 40, 40, 40, 15, 15}),
             boost::test_tools::per_element());
}

BOOST_AUTO_TEST_CASE(cpu_backend_primitives_match_double_sums) {
  const nn::Backend& cpu = nn::cpu_backend();
  BOOST_TEST(std::string(cpu.name()) == "cpu");
  const std::vector<float> x = test::normal_vector(1003, 5), y = test::normal_vector(1003, 6);
  double xx = 0.0, xy = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    xx += static_cast<double>(x[i]) * x[i];
    xy += static_cast<double>(x[i]) * y[i];
  }
  BOOST_TEST(cpu.sum_squares(x) == xx, boost::test_tools::tolerance(1e-12));
  BOOST_TEST(cpu.dot(x, y) == xy, boost::test_tools::tolerance(1e-11));
  // C[2, 2] = A[2, 3] B[3, 2], by hand
  const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {7, 8, 9, 10, 11, 12};
  float c[4] = {};
  cpu.gemm(false, false, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
  BOOST_TEST(std::vector<float>(c, c + 4) == (std::vector<float>{58, 64, 139, 154}),
             boost::test_tools::per_element());
  AlignedBuffer buffer = cpu.allocate(5);
  cpu.copy(std::span<const float>(a, 5), buffer.span());
  BOOST_TEST(buffer.data()[4] == 5.0f);
}
