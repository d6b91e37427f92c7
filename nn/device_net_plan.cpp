// plan_device_net; see device_net_plan.hpp.
#include "nn/device_net_plan.hpp"

#include <string>

#include "core/error.hpp"

namespace lbt::nn {
namespace {

// Reads the segment table in order, each segment required to hold the size the layer needs.
class SegmentReader {
 public:
  explicit SegmentReader(const std::vector<Segment>& segments) : segments_(segments) {}
  std::int64_t take(std::int64_t size, std::size_t layer) {
    if (next_ >= segments_.size() || segments_[next_].size != static_cast<std::size_t>(size))
      throw ConfigError("the GPU's layer " + std::to_string(layer) +
                        " does not fit the CPU model's parameter table");
    return static_cast<std::int64_t>(segments_[next_++].offset);
  }
  bool all_read() const { return next_ == segments_.size(); }

 private:
  const std::vector<Segment>& segments_;
  std::size_t next_ = 0;
};

// He et al.'s basic block (nn/cpu/basic_block.hpp): two 3x3 convolutions without bias, each with
// its BatchNorm, and a 1x1 projection with its BatchNorm where the shape changes.
void plan_residual(DeviceOpPlan& op, const LayerSpec& l, SegmentReader& read, std::size_t i) {
  const Shape3 in = op.in;
  const std::int64_t o = l.out;
  op.stride = l.stride;
  op.out = {o, (in.h - 1) / l.stride + 1, (in.w - 1) / l.stride + 1};
  std::vector<std::int64_t> sizes{o * in.c * 9, o, o, o * o * 9, o, o};
  if (l.stride != 1 || in.c != o) sizes.insert(sizes.end(), {o * in.c, o, o});
  for (std::int64_t size : sizes) op.params.push_back(read.take(size, i));
}

DeviceOpPlan plan_op(const LayerSpec& l, std::size_t i, Shape3 shape, SegmentReader& read) {
  DeviceOpPlan op{DeviceOpKind::kRelu, shape, shape};
  const bool side_by_side = l.stride == l.kernel;  // pools: windows side by side
  if (l.type == "conv") {
    op.kind = DeviceOpKind::kConv;
    op.conv = {l.out, l.kernel, l.stride, l.padding, l.bias};
    op.out = {l.out, (shape.h + 2 * l.padding - l.kernel) / l.stride + 1,
              (shape.w + 2 * l.padding - l.kernel) / l.stride + 1};
    op.params.push_back(read.take(l.out * shape.c * l.kernel * l.kernel, i));
    if (l.bias) op.params.push_back(read.take(l.out, i));
  } else if ((l.type == "pool" || l.type == "avgpool") && side_by_side) {
    op.kind = l.type == "pool" ? DeviceOpKind::kMaxPool : DeviceOpKind::kAvgPool;
    op.kernel = l.kernel;
    op.out = {shape.c, shape.h / l.kernel, shape.w / l.kernel};
  } else if (l.type == "global_avgpool") {
    op.kind = DeviceOpKind::kGlobalAvgPool;
    op.out = {shape.c, 1, 1};
  } else if (l.type == "relu") {
    op.kind = DeviceOpKind::kRelu;
  } else if (l.type == "batchnorm") {
    op.kind = DeviceOpKind::kBatchNorm;
    op.params = {read.take(shape.c, i), read.take(shape.c, i)};
  } else if (l.type == "residual") {
    op.kind = DeviceOpKind::kResidual;
    plan_residual(op, l, read, i);
  } else if (l.type == "linear") {
    op.kind = DeviceOpKind::kLinear;
    op.in = {shape.size(), 1, 1};
    op.out = {l.out, 1, 1};
    op.params.push_back(read.take(l.out * shape.size(), i));
    if (l.bias) op.params.push_back(read.take(l.out, i));
  } else {
    throw ConfigError(
        "the GPU runs conv, pool and avgpool (stride = kernel), global_avgpool, relu, batchnorm, "
        "residual and linear layers; layer " +
        std::to_string(i) + " is " + l.type);
  }
  return op;
}

}  // namespace

std::vector<DeviceOpPlan> plan_device_net(const std::vector<LayerSpec>& layers, Shape3 input,
                                          const std::vector<Segment>& segments) {
  SegmentReader read(segments);
  std::vector<DeviceOpPlan> ops;
  Shape3 shape = input;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    ops.push_back(plan_op(layers[i], i, shape, read));
    shape = ops.back().out;
  }
  if (ops.empty() || ops.back().kind != DeviceOpKind::kLinear || !read.all_read())
    throw ConfigError("the GPU's network ends in a linear layer and uses every parameter");
  return ops;
}

namespace {

std::string plane(Shape3 s) {
  return std::to_string(s.h) + "x" + std::to_string(s.w);
}

std::string volume(Shape3 s) {
  return std::to_string(s.c) + "x" + plane(s);
}

std::string stride_text(std::int64_t stride) {
  return stride == 1 ? "" : " /" + std::to_string(stride);
}

}  // namespace

std::string describe(const DeviceOpPlan& op) {
  const std::string channels = std::to_string(op.in.c) + "->" + std::to_string(op.out.c);
  const std::string window = std::to_string(op.kernel) + "x" + std::to_string(op.kernel);
  switch (op.kind) {
    case DeviceOpKind::kConv: {
      const std::string k = std::to_string(op.conv.kernel);
      return "conv " + channels + " " + k + "x" + k + stride_text(op.conv.stride) + " on " +
             plane(op.in);
    }
    case DeviceOpKind::kMaxPool:
      return "maxpool " + window + " on " + volume(op.in);
    case DeviceOpKind::kAvgPool:
      return "avgpool " + window + " on " + volume(op.in);
    case DeviceOpKind::kGlobalAvgPool:
      return "global_avgpool on " + volume(op.in);
    case DeviceOpKind::kRelu:
      return "relu on " + volume(op.in);
    case DeviceOpKind::kBatchNorm:
      return "batchnorm on " + volume(op.in);
    case DeviceOpKind::kResidual:
      return "residual " + channels + stride_text(op.stride) + " on " + plane(op.in);
    case DeviceOpKind::kLinear:
      return "linear " + channels;
  }
  return "?";
}

}  // namespace lbt::nn
