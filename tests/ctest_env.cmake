# Read by ctest before it runs any test (TEST_INCLUDE_FILES, tests/CMakeLists.txt): the
# environment every test starts with, unless the caller set it.
#
# Two tests at a time (ctest -j2) on two cores, each with two OpenMP threads: a thread idle
# between parallel regions spins on a core the other test could use, so idle threads sleep
# instead. The Release tests took 308 s against 352 s on the 2-core AVX2 machine (2026-11-28);
# no result depends on it.
if(NOT DEFINED ENV{OMP_WAIT_POLICY})
  set(ENV{OMP_WAIT_POLICY} passive)
endif()
