// Schedule from config; see schedule_config.hpp. (Constant LR until the schedules issue lands.)
#include "trainer/schedule_config.hpp"

namespace lbt::trainer {

schedules::Schedule make_schedule(Config& config, const ScheduleContext& context) {
  return schedules::constant(context.base_lr);
}

}  // namespace lbt::trainer
