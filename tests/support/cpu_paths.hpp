// Runs a check once on every CPU path this machine has (core/cpu_path.hpp), each in its own
// Boost.Test context: a kernel test then covers the AVX-512, AVX2 and generic copies of the
// kernels wherever the CPU can run them, not only the one chosen at startup.
#pragma once
#include <boost/test/unit_test.hpp>

#include "core/cpu_path.hpp"

namespace lbt::test {

template <class Check>
void on_every_cpu_path(Check&& check) {
  for (CpuPath path : available_cpu_paths()) {
    ScopedCpuPath on(path);
    BOOST_TEST_CONTEXT("cpu path " << cpu_path_name(path)) { check(); }
  }
}

}  // namespace lbt::test
