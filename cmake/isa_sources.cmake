# Kernels compiled once per ISA, chosen at run time (core/cpu_path.hpp): on x86-64 a generic
# copy (the build's baseline), one for AVX2 + FMA (16 ymm registers) and one for AVX-512
# (32 zmm); elsewhere the generic copy alone. Each copy defines its functions in namespace
# LBT_ISA_NS (isa_generic, isa_avx2, isa_avx512); core/cpu_dispatch.hpp calls the chosen one.
# The flags stop at the vector ISA (no -march, no BMI): code that leaks out of a copy's
# namespaces, such as a library template instantiated there, then still runs on the baseline
# CPU's integer units; tests/core/check_isa_isolation.cmake checks that no wide register does.
set(LBT_ISAS generic)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  list(APPEND LBT_ISAS avx2 avx512)
endif()
set(LBT_ISA_FLAGS_generic "")
set(LBT_ISA_FLAGS_avx2 -mavx2 -mfma)
set(LBT_ISA_FLAGS_avx512 -mavx512f -mavx512bw -mavx512dq -mavx512vl -mavx2 -mfma)

# lbt_add_isa_sources(target LIBS lib... SOURCES src... [OPTIONS flag...]): the sources compiled
# per ISA into target; LIBS give their include paths and flags (OpenMP, Eigen, ...), OPTIONS
# more compile flags for every copy.
function(lbt_add_isa_sources target)
  cmake_parse_arguments(ARG "" "" "LIBS;SOURCES;OPTIONS" ${ARGN})
  foreach(isa ${LBT_ISAS})
    set(obj ${target}_${isa})
    add_library(${obj} OBJECT ${ARG_SOURCES})
    # -Wno-psabi: see core/vec16.hpp.
    target_compile_options(${obj} PRIVATE ${LBT_ISA_FLAGS_${isa}} -Wno-psabi ${ARG_OPTIONS})
    target_compile_definitions(${obj} PRIVATE LBT_ISA_NS=isa_${isa})
    target_link_libraries(${obj} PRIVATE ${ARG_LIBS})
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${obj}>)
  endforeach()
endfunction()
