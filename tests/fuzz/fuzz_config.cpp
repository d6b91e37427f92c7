// libFuzzer target: TOML text through every config reader a run uses. Bad configs must end in
// lbt::ConfigError (or another lbt::Error), never a crash or a foreign exception.
#include <cstdint>
#include <string_view>

#include "core/config.hpp"
#include "core/error.hpp"
#include "optim/optimizer.hpp"
#include "trainer/schedule_config.hpp"
#include "trainer/train_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    lbt::Config config = lbt::Config::from_string(text, "fuzz.toml");
    for (int world : {1, 3}) {
      lbt::Config copy = config;
      auto t = lbt::trainer::read_train_config(copy, world);
      const double lr = lbt::optim::base_learning_rate(copy);
      lbt::optim::make_optimizer(copy, 64);
      auto schedule = lbt::trainer::make_schedule(copy, {lr, t.global_batch, 10, 100});
      schedule(0);
      schedule(99);
      copy.check_no_unknown_keys();
      copy.resolved_toml();
    }
  } catch (const lbt::Error&) {
  }
  return 0;
}
