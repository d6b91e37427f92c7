// Config reading for the trust-ratio scaling function phi; see phi_config.hpp.
#include "optim/phi_config.hpp"

#include "core/shortest_text.hpp"
#include "optim/optimizer_keys.hpp"

namespace lbt::optim {

PhiOptions read_phi_options(Config& config, const std::string& prefix) {
  const auto& keys = optimizer_keys();
  PhiOptions o;
  o.phi = config.get_string(Schema::in(keys, prefix + ".phi")) == "clamp" ? Phi::kClamp
                                                                          : Phi::kIdentity;
  // Read with phi = identity too, so that a clamp given without phi = clamp is not ignored
  // silently: it shows in the resolved config, and validate_phi checks it.
  o.clamp_min = config.get_double(Schema::in(keys, prefix + ".clamp_min"));
  o.clamp_max = config.get_double(Schema::in(keys, prefix + ".clamp_max"));
  return o;
}

void validate_phi(const PhiOptions& o, const Config& config, const std::string& prefix) {
  // A clamp other than the defaults under phi = identity clamps nothing: it was taken without a
  // word (2026-11-30 audit). The defaults stay accepted: every resolved config holds them.
  const PhiOptions defaults;
  if (o.phi != Phi::kClamp &&
      (o.clamp_min != defaults.clamp_min || o.clamp_max != defaults.clamp_max)) {
    config.fail(prefix + ".phi", "\"clamp\" where a clamp is set (identity clamps nothing)",
                "\"identity\" with clamp_min " + shortest_text(o.clamp_min) + ", clamp_max " +
                    shortest_text(o.clamp_max),
                "set " + prefix + ".phi = \"clamp\", or drop the clamp keys");
  }
  if (o.phi != Phi::kClamp) return;
  if (!(o.clamp_min >= 0.0 && o.clamp_min <= o.clamp_max))
    config.fail(prefix + ".clamp_min", "in [0, clamp_max]",
                shortest_text(o.clamp_min) + " (clamp_max " + shortest_text(o.clamp_max) + ")");
}

}  // namespace lbt::optim
