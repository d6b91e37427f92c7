// Flat parameter/gradient buffers and the segment table; see params.hpp.
#include "core/params.hpp"

#include <algorithm>
#include <cstdint>

#include "core/error.hpp"

namespace lbt {

const char* to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::kWeight:
      return "weight";
    case ParamKind::kBias:
      return "bias";
    case ParamKind::kNorm:
      return "norm";
  }
  return "?";
}

Segment make_segment(std::string name, std::size_t offset, std::size_t size, ParamKind kind) {
  Segment s{std::move(name), offset, size, kind, true, true};
  if (kind != ParamKind::kWeight) s.weight_decay = s.trust_ratio = false;
  return s;
}

std::size_t ParameterStore::add(std::string name, std::size_t size, ParamKind kind) {
  if (allocated_) throw Error("ParameterStore::add(" + name + ") after allocate()");
  // Keep each tensor 64-byte aligned inside the flat buffer (16 floats) for vector loads.
  std::size_t offset = (total_ + 15) / 16 * 16;
  segments_.push_back(make_segment(std::move(name), offset, size, kind));
  total_ = offset + size;
  return segments_.size() - 1;
}

void ParameterStore::allocate(const Device& device) {
  own_params_ = device.allocate(total_);
  own_grads_ = device.allocate(total_);
  params_ = own_params_.span();
  grads_ = own_grads_.span();
  allocated_ = true;
}

void ParameterStore::zero_grads() {
  std::fill(grads_.begin(), grads_.end(), 0.0f);
}

namespace {

// Moves `view` (backed by `own`) into `memory`, copying the values when asked.
void place(const char* what, bool allocated, std::size_t total, std::span<float>& view,
           AlignedBuffer& own, std::span<float> memory, bool copy_values) {
  if (!allocated) throw Error(std::string("ParameterStore::") + what + " before allocate()");
  if (memory.size() < total || reinterpret_cast<std::uintptr_t>(memory.data()) % 64 != 0) {
    throw Error(std::string("ParameterStore::") + what + " needs " + std::to_string(total) +
                " floats 64-byte aligned, got " + std::to_string(memory.size()));
  }
  if (copy_values) std::copy(view.begin(), view.end(), memory.begin());
  view = memory.first(total);
  own = AlignedBuffer();
}

}  // namespace

void ParameterStore::place_grads(std::span<float> memory, std::shared_ptr<void> owner) {
  place("place_grads", allocated_, total_, grads_, own_grads_, memory, true);
  grads_owner_ = std::move(owner);
}

void ParameterStore::place_params(std::span<float> memory, std::shared_ptr<void> owner,
                                  bool copy_values) {
  place("place_params", allocated_, total_, params_, own_params_, memory, copy_values);
  params_owner_ = std::move(owner);
}

}  // namespace lbt
