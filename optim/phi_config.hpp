// Reading and validating the trust-ratio scaling function phi (trust_ratio.hpp) from config,
// shared by LARS and LAMB: PREFIX.phi = "identity" | "clamp", PREFIX.clamp_min, PREFIX.clamp_max.
#pragma once
#include <string>

#include "core/config.hpp"
#include "optim/trust_ratio.hpp"

namespace lbt::optim {

PhiOptions read_phi_options(Config& config, const std::string& prefix);
void validate_phi(const PhiOptions& o, const Config& config, const std::string& prefix);

}  // namespace lbt::optim
