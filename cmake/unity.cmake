# SPDX-License-Identifier: Apache-2.0
# cmake/unity.cmake: unity builds. Each target's sources are compiled eight to a translation
# unit, so the heavy headers (nlohmann/json, gtest, fmt, httplib) and their template
# instantiations are compiled once per eight sources. The CLI library took 69 s of CPU instead
# of 179 s. Sources of one unity file therefore must not define two internal-linkage names
# alike (scripts/check-unity-names.sh, run by ctest, checks it). OFF compiles every source on
# its own, which is what checks that each source includes what it uses.
option(TANDEM_UNITY "Compile each target's sources eight to a translation unit" ON)
if(TANDEM_UNITY)
  set(CMAKE_UNITY_BUILD ON)
  set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
endif()

# tandem_unity_groups(target [MATCH regex group]...): one unity file per group of the target's
# sources instead of batches of eight. A source's group is the first MATCH whose regex its
# file name matches, else its directory. For targets made of model folders that each name
# their weights and helpers alike (plugins/qwen-nextn/qwen3 and qwen35 both have kWq): each
# folder, or each model's sources, is a unity file of its own.
function(tandem_unity_groups target)
  if(NOT TANDEM_UNITY)
    return()
  endif()
  cmake_parse_arguments(A "" "" "MATCH" ${ARGN})
  list(LENGTH A_MATCH n)
  math(EXPR odd "${n} % 2")
  if(odd OR A_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "tandem_unity_groups(${target}): MATCH takes pairs of regex and group")
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD_MODE GROUP)
  get_target_property(srcs ${target} SOURCES)
  foreach(src ${srcs})
    if(NOT src MATCHES "\\.cpp$")
      continue()
    endif()
    get_filename_component(dir "${src}" DIRECTORY)
    get_filename_component(group "${dir}" NAME)
    get_filename_component(name "${src}" NAME)
    set(rules ${A_MATCH})
    while(rules)
      list(POP_FRONT rules regex candidate)
      if(name MATCHES "${regex}")
        set(group ${candidate})
        break()
      endif()
    endwhile()
    set_property(SOURCE "${src}" TARGET_DIRECTORY ${target} PROPERTY UNITY_GROUP "${group}")
  endforeach()
endfunction()
