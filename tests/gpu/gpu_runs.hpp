// What the GPU suites' runs share: where Fashion-MNIST is.
#pragma once
#include <cstdlib>
#include <string>

namespace lbt::test {

// LBT_FMNIST_DIR, or Debian's place for it.
inline std::string fmnist_dir() {
  const char* dir = std::getenv("LBT_FMNIST_DIR");
  return dir && *dir ? dir : "/usr/share/datasets/fashion-mnist";
}

}  // namespace lbt::test
