// Config reading for the trust-ratio scaling function phi; see phi_config.hpp.
#include "optim/phi_config.hpp"

namespace lbt::optim {

PhiOptions read_phi_options(Config& config, const std::string& prefix, PhiOptions o) {
  std::string phi = config.get_string(prefix + ".phi", o.phi == Phi::kClamp ? "clamp" : "identity",
                                      "trust-ratio scaling phi: identity, or clamp to [clamp_min, clamp_max]");
  if (phi == "identity") o.phi = Phi::kIdentity;
  else if (phi == "clamp") o.phi = Phi::kClamp;
  else config.fail(prefix + ".phi", "one of: identity, clamp", "'" + phi + "'");
  if (o.phi == Phi::kClamp) {
    o.clamp_min = config.get_double(prefix + ".clamp_min", o.clamp_min, "lower clamp of the trust ratio");
    o.clamp_max = config.get_double(prefix + ".clamp_max", o.clamp_max, "upper clamp of the trust ratio");
  }
  return o;
}

void validate_phi(const PhiOptions& o, const Config& config, const std::string& prefix) {
  if (o.phi != Phi::kClamp) return;
  if (!(o.clamp_min >= 0.0 && o.clamp_min <= o.clamp_max))
    config.fail(prefix + ".clamp_min", "in [0, clamp_max]",
                std::to_string(o.clamp_min) + " (clamp_max " + std::to_string(o.clamp_max) + ")");
}

}  // namespace lbt::optim
