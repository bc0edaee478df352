/* SPDX-License-Identifier: Apache-2.0 */
// tests/fuzz/fuzz_support.h: what the libFuzzer harnesses (tests/fuzz/*.cpp) share: checks
// that stop the process in any build (the GCC regression driver has no sanitizer to do it),
// splitting one input into several files, a scratch directory, and reading fixtures.
// Each harness defines LLVMFuzzerTestOneInput and, if it needs set-up, LLVMFuzzerInitialize;
// it is linked either with libFuzzer (TANDEM_FUZZ=ON, scripts/fuzz.sh) or with
// regression_main.cpp (the normal test suite, which replays the corpora).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// A property the parser promised does not hold: print it and abort, so that libFuzzer
// saves the input as a crash and the regression driver fails.
#define FUZZ_CHECK(cond)                                                            \
    do {                                                                            \
        if (!(cond)) ::tdm::fuzz::check_failed(#cond, __FILE__, __LINE__);          \
    } while (0)

namespace tdm::fuzz {

[[noreturn]] void check_failed(const char* what, const char* file, int line);

// The input as text.
inline std::string_view as_text(const uint8_t* data, size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

// Splits the input at NUL bytes into exactly `n` parts (missing parts are empty; the last
// part keeps any further NULs). Harnesses that read several files take them this way, and
// their seeds are the files joined with "\0".
std::vector<std::string_view> split_parts(const uint8_t* data, size_t size, size_t n);

// A directory private to this process, created on first use and removed at exit.
const std::string& scratch_dir();

// Writes `bytes` to scratch_dir()/name, replacing the file; returns the path.
std::string write_scratch_file(const std::string& name, std::string_view bytes);

// Reads a file whole, as it is. Aborts if it cannot be read (a harness without its fixture
// must not pass silently).
std::string read_file_or_die(const std::string& path);

// TANDEM_TEST_FIXTURES_DIR + "/" + relative.
std::string fixture_path(const std::string& relative);

// A fixture under tests/fixtures/, decompressed if its name ends in ".zst"; aborts as above.
std::string read_fixture_or_die(const std::string& relative);

// Whether `s` is valid UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
bool is_valid_utf8(std::string_view s);

}  // namespace tdm::fuzz
