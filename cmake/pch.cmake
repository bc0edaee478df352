# SPDX-License-Identifier: Apache-2.0
# cmake/pch.cmake: -DTANDEM_PCH=ON precompiles the standard and third-party headers most
# sources include, once per target. scripts/sanitize.sh turns it on: at -O0 a translation
# unit spends most of its time parsing these headers, and a precompiled copy cut a host
# source's compile time by about 40% under clang with ASan. The normal build leaves it off:
# it is a unity build already (TANDEM_UNITY), which shares the headers' cost within a
# batch of sources.
option(TANDEM_PCH "Precompile common standard and third-party headers (faster clean builds)" OFF)

set(TANDEM_PCH_HEADERS
  <algorithm> <array> <atomic> <chrono> <cmath> <cstdint> <cstdio> <cstdlib> <cstring>
  <filesystem> <functional> <limits> <map> <memory> <mutex> <optional> <set> <span>
  <string> <string_view> <unordered_map> <utility> <vector>
  <fmt/format.h> <nlohmann/json.hpp>)

# tandem_use_pch(target [GTEST]): the target's C++ sources get TANDEM_PCH_HEADERS (and
# GoogleTest's header with GTEST) precompiled, when TANDEM_PCH is on.
function(tandem_use_pch target)
  cmake_parse_arguments(A "GTEST" "" "" ${ARGN})
  if(NOT TANDEM_PCH)
    return()
  endif()
  # Unity-built, a target of eight sources or fewer is one translation unit (or a few
  # small groups): precompiling would parse the headers just as often, plus writing and
  # reading the precompiled file (about 4 s per target under clang with ASan).
  get_target_property(unity ${target} UNITY_BUILD)
  if(unity)
    get_target_property(srcs ${target} SOURCES)
    list(FILTER srcs INCLUDE REGEX "\\.(cpp|cc|cxx)$")
    list(LENGTH srcs n)
    if(n LESS_EQUAL CMAKE_UNITY_BUILD_BATCH_SIZE)
      return()
    endif()
  endif()
  set(headers ${TANDEM_PCH_HEADERS})
  if(A_GTEST)
    list(APPEND headers <gtest/gtest.h>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})  # the targets using it are C++ only
endfunction()
