// model.device other than cpu in run_training (train_run.hpp): the device's step for the run.
#pragma once
#include <memory>

#include "nn/model.hpp"
#include "trainer/comm/communicator.hpp"
#include "trainer/config/run_config.hpp"
#include "trainer/data/load.hpp"
#include "trainer/device_step.hpp"

namespace lbt::experiments {

// What the device's step is built from, after every check that it can run this run
// (trainer/device_support.hpp) and that this program has it (lbt-cuda; lbt train execs it,
// cli/cmd_train.cpp). nullptr for cpu. Collective over `comm` where the device's factory
// places several ranks (trainer/device_placement.hpp).
std::unique_ptr<trainer::DeviceStep> make_device_step(const trainer::RunConfig& run,
                                                      comm::Communicator& comm,
                                                      const data::Splits& splits,
                                                      const nn::Model& model, bool probe);

// What make_device_step checks before it builds anything, for `lbt train --check`: the data
// (classification only), the B_noise probe (`probe`: none on a device) and, where this program
// has the device (lbt-cuda), that the machine can use it (a GPU). Nothing for cpu.
void check_device_run(const trainer::RunConfig& run, const data::Dataset& train, bool probe);

}  // namespace lbt::experiments
