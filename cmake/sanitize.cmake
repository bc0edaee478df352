# SPDX-License-Identifier: Apache-2.0
# cmake/sanitize.cmake: sanitizer and fuzzing builds (docs/RELIABILITY.md).
#   -DTANDEM_SANITIZE=address,undefined   every target instrumented; UBSan findings abort
#   -DTANDEM_FUZZ=ON                      clang only: coverage instrumentation for libFuzzer and the
#                                         harness executables of tests/fuzz (fuzz_<harness>)
# scripts/sanitize.sh and scripts/fuzz.sh configure these; the normal build uses neither.
set(TANDEM_SANITIZE "" CACHE STRING "Comma-separated -fsanitize= list for every target (e.g. address,undefined)")
option(TANDEM_FUZZ "Build the libFuzzer harnesses in tests/fuzz (needs clang)" OFF)

if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  add_compile_options(-Wno-unknown-warning-option)  # TANDEM_WARNINGS has GCC's -Wshadow=local
endif()

if(TANDEM_FUZZ AND NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "TANDEM_FUZZ=ON needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++ "
                      "-DCMAKE_C_COMPILER=clang, as scripts/fuzz.sh does")
endif()

if(TANDEM_SANITIZE)
  add_compile_options(-fsanitize=${TANDEM_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${TANDEM_SANITIZE})
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    # clang links its sanitizer runtime statically into executables only, which leaves the
    # plugins' (-Wl,--no-undefined) references to it unresolved. The shared runtime serves
    # the executable and every module it loads; the rpath finds it without LD_LIBRARY_PATH.
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-x86_64.so
                    OUTPUT_VARIABLE _tandem_asan_rt OUTPUT_STRIP_TRAILING_WHITESPACE)
    get_filename_component(_tandem_sanitizer_dir "${_tandem_asan_rt}" DIRECTORY)
    add_link_options(-shared-libsan -Wl,-rpath,${_tandem_sanitizer_dir})
  endif()
endif()

if(TANDEM_FUZZ)
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# tandem_parse_at_o1(target...): in sanitizer builds (-O0 to build fast), these targets are
# built at -O1 (still fully checked). For the code that parses a real tokenizer.json (33 MB for
# Gemma 3): at -O0 under ASan loading it took over a minute, at -O1 about 19 s. Every program
# that loads one needs it as much as the library does: the linker keeps the first copy of each
# inline template it meets, and a program's own objects come first, so nlohmann's parser runs
# at the level of the program's sources.
function(tandem_parse_at_o1)
  if(TANDEM_SANITIZE AND CMAKE_BUILD_TYPE STREQUAL "Debug")
    foreach(t ${ARGN})
      target_compile_options(${t} PRIVATE -O1)
    endforeach()
  endif()
endfunction()
