// Flat parameter/gradient buffers and the segment table; see params.hpp.
#include "core/params.hpp"

#include "core/error.hpp"

namespace lbt {

const char* to_string(ParamKind kind) {
  switch (kind) {
    case ParamKind::kWeight: return "weight";
    case ParamKind::kBias: return "bias";
    case ParamKind::kNorm: return "norm";
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
  grads_.resize(total_);
  allocated_ = true;
}

}  // namespace lbt
