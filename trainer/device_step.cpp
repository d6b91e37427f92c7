// The registry of device_step.hpp.
#include "trainer/device_step.hpp"

#include <map>

namespace lbt::trainer {
namespace {

struct Registered {
  DeviceStepFactory factory;
  DeviceProbe probe;
};

std::map<std::string, Registered>& registry() {
  static std::map<std::string, Registered> registered;
  return registered;
}

}  // namespace

void register_device_step(const std::string& device, DeviceStepFactory factory, DeviceProbe probe) {
  registry()[device] = {std::move(factory), std::move(probe)};
}

const DeviceStepFactory* device_step_factory(const std::string& device) {
  const auto it = registry().find(device);
  return it == registry().end() ? nullptr : &it->second.factory;
}

const DeviceProbe* device_probe(const std::string& device) {
  const auto it = registry().find(device);
  return it == registry().end() ? nullptr : &it->second.probe;
}

}  // namespace lbt::trainer
