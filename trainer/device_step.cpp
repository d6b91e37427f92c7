// The registry of device_step.hpp.
#include "trainer/device_step.hpp"

#include <map>

namespace lbt::trainer {
namespace {

std::map<std::string, DeviceStepFactory>& factories() {
  static std::map<std::string, DeviceStepFactory> registered;
  return registered;
}

}  // namespace

void register_device_step(const std::string& device, DeviceStepFactory factory) {
  factories()[device] = std::move(factory);
}

const DeviceStepFactory* device_step_factory(const std::string& device) {
  const auto it = factories().find(device);
  return it == factories().end() ? nullptr : &it->second;
}

}  // namespace lbt::trainer
