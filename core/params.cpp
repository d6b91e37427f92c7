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

void ParameterStore::allocate() {
  params_.resize(total_);
  own_grads_.resize(total_);
  grads_ = own_grads_.span();
  allocated_ = true;
}

void ParameterStore::zero_grads() {
  std::fill(grads_.begin(), grads_.end(), 0.0f);
}

void ParameterStore::place_grads(std::span<float> memory, std::shared_ptr<void> owner) {
  if (!allocated_) throw Error("ParameterStore::place_grads before allocate()");
  if (memory.size() < total_ || reinterpret_cast<std::uintptr_t>(memory.data()) % 64 != 0) {
    throw Error("ParameterStore::place_grads needs " + std::to_string(total_) +
                " floats 64-byte aligned, got " + std::to_string(memory.size()));
  }
  std::copy(grads_.begin(), grads_.end(), memory.begin());
  grads_ = memory.first(total_);
  grads_owner_ = std::move(owner);
  own_grads_ = AlignedBuffer();
}

}  // namespace lbt
