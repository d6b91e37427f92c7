// take_snapshot / restore_snapshot; see snapshot.hpp.
#include "trainer/snapshot.hpp"

#include <algorithm>

namespace lbt::trainer {
namespace {

template <typename Span>
std::vector<float> copy_of(const Span& s) {
  return std::vector<float>(s.begin(), s.end());
}

template <typename Span>
void copy_back(const std::vector<float>& from, Span to) {
  std::copy(from.begin(), from.end(), to.begin());
}

}  // namespace

ModelSnapshot take_snapshot(nn::Model& model, const optim::Optimizer& optimizer) {
  ModelSnapshot s;
  s.params = copy_of(model.store().params());
  for (const auto& [name, buffer] : optimizer.state().buffers())
    s.optimizer_buffers.push_back(copy_of(buffer.span()));
  for (const auto& buffer : model.buffers()) s.layer_buffers.push_back(copy_of(buffer));
  s.streams = model.stream_states();
  return s;
}

void restore_snapshot(const ModelSnapshot& s, nn::Model& model, optim::Optimizer& optimizer,
                      bool write_params) {
  if (write_params) copy_back(s.params, model.store().params());
  auto& optimizer_buffers = optimizer.state().buffers();
  for (std::size_t i = 0; i < optimizer_buffers.size(); ++i)
    copy_back(s.optimizer_buffers[i], optimizer_buffers[i].second.span());
  const auto layer_buffers = model.buffers();
  for (std::size_t i = 0; i < layer_buffers.size(); ++i)
    copy_back(s.layer_buffers[i], layer_buffers[i]);
  model.set_stream_states(s.streams);
}

}  // namespace lbt::trainer
