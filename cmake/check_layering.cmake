# The dependency direction of docs/DESIGN.md, checked on the sources: every `#include "part/..."`
# of a part must name the part itself or one it may depend on. Run by CTest (test `layering`):
#   cmake -DSOURCE_DIR=<repo> -P cmake/check_layering.cmake
# The link graph enforces the same at build time for the libraries (lbt_nn links lbt_core only,
# so a call into trainer/ fails to link); this also catches header-only uses.
cmake_minimum_required(VERSION 3.24)
set(allowed_core core)
set(allowed_schedules core)
set(allowed_nn core)
set(allowed_optim core)
set(allowed_noise core)
set(allowed_analysis core)
set(allowed_trainer core nn noise optim schedules)
set(allowed_experiments analysis core nn noise optim schedules trainer)
set(allowed_cli analysis core experiments trainer)
set(allowed_python analysis core experiments noise schedules trainer)
set(parts core schedules nn optim noise analysis trainer experiments cli python)
set(all_parts ${parts} bench tests)
# Inside experiments/, each folder is a driver (sweep/, scaling/, memory/, cbs/): it builds on
# experiments/'s own files (one run, processes, locks, files, the schema), and those files on no
# driver. A driver builds on another only where listed here: lbt cbs runs its branches as the
# sweep's trials; lbt scaling checks that its ranks fit with lbt memory's estimate.
set(experiments_cbs_builds_on sweep)
set(experiments_scaling_builds_on memory)

set(violations "")
foreach(part ${parts})
  file(GLOB_RECURSE sources ${SOURCE_DIR}/${part}/*.cpp ${SOURCE_DIR}/${part}/*.hpp
                            ${SOURCE_DIR}/${part}/*.cu ${SOURCE_DIR}/${part}/*.cuh)
  foreach(source ${sources})
    file(STRINGS ${source} includes REGEX "^#include \"[a-z_]+/")
    foreach(line ${includes})
      string(REGEX REPLACE "^#include \"([a-z_]+)/.*" "\\1" used "${line}")
      file(RELATIVE_PATH where ${SOURCE_DIR} ${source})
      # A backend's folder (nn/cpu/) is reached through nn/backend.hpp, not included above nn/.
      if(line MATCHES "^#include \"nn/cpu/" AND NOT part STREQUAL "nn")
        list(APPEND violations "${where}: only nn/ includes nn/cpu/; use nn/backend.hpp (${line})")
      endif()
      if(line MATCHES "^#include \"experiments/([a-z_]+)/")
        set(driver ${CMAKE_MATCH_1})
        set(own_driver "")
        if(where MATCHES "^experiments/([a-z_]+)/")
          set(own_driver ${CMAKE_MATCH_1})
        endif()
        if(part STREQUAL "experiments" AND NOT driver STREQUAL own_driver
           AND NOT driver IN_LIST experiments_${own_driver}_builds_on)
          list(APPEND violations
               "${where}: experiments/${driver}/ is a driver: ${where} may not include it (${line})")
        endif()
      endif()
      if(NOT used IN_LIST all_parts OR used STREQUAL "${part}" OR used IN_LIST allowed_${part})
        continue()
      endif()
      list(APPEND violations "${where}: ${part}/ may not include ${used}/ (${line})")
    endforeach()
  endforeach()
endforeach()
if(violations)
  list(JOIN violations "\n" text)
  message(FATAL_ERROR "layering: includes against the dependency direction:\n${text}")
endif()
message(STATUS "layering: every part includes only the parts below it")
