/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/fixtures.h: access to the committed test fixtures.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

namespace tdm::test {

// Absolute path of a file under tests/fixtures/.
std::string fixture_path(const std::string& relative);

// Reads a fixture; a name ending in ".zst" is decompressed. Fails the
// calling test (ADD_FAILURE) and returns "" if the file is missing or corrupt.
std::string read_fixture(const std::string& relative);

// Reads any file whole; "" and a test failure if it cannot be read.
std::string read_file(const std::string& path);

// n normally distributed values (mean 0, deviation `scale`), the same for the same seed.
std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f);

// The bytes of f32 values, as an F32 weight holds them.
std::vector<uint8_t> f32_bytes(const std::vector<float>& v);

// A fresh empty directory under the system temp dir, removed at process exit.
std::string make_temp_dir(const std::string& tag);

// Sets an environment variable for a scope (restoring the old value), for the
// runtime's experiment knobs such as TANDEM_MATMUL_LAYOUT.
class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name) {
        if (const char* old = std::getenv(name)) old_ = old, had_ = true;
        setenv(name, value, 1);
    }
    ~ScopedEnv() {
        if (had_)
            setenv(name_.c_str(), old_.c_str(), 1);
        else
            unsetenv(name_.c_str());
    }
    ScopedEnv(const ScopedEnv&) = delete;
    ScopedEnv& operator=(const ScopedEnv&) = delete;

private:
    std::string name_, old_;
    bool had_ = false;
};

}  // namespace tdm::test
