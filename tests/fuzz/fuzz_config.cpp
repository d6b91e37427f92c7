// libFuzzer target: TOML text through every config reader a run uses. Bad configs must end in
// lbt::ConfigError (or another lbt::Error), never a crash or a foreign exception.
#include <cstdint>
#include <string_view>

#include "core/config.hpp"
#include "core/error.hpp"
#include "trainer/config/run_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    lbt::Config config = lbt::Config::from_string(text, "fuzz.toml");
    config.validate(lbt::trainer::run_schema());
    for (int world : {1, 3}) {
      lbt::Config copy = config;
      const auto run = lbt::trainer::resolve_run_config(copy, world);
      lbt::optim::make_optimizer(run.optimizer, 64);
      auto schedule = lbt::trainer::run_schedule(run, {10, 100}, nullptr);
      schedule(0);
      schedule(99);
      copy.resolved_toml();
    }
  } catch (const lbt::Error&) {
  }
  return 0;
}
