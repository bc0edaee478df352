// SPDX-License-Identifier: Apache-2.0
// tests/support/fixtures.cpp
#include "support/fixtures.h"

#include <cstring>

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <vector>

namespace tdm::test {

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

std::vector<float> randn(size_t n, uint32_t seed, float scale) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> v(n);
    for (float& x : v) x = nd(rng);
    return v;
}

std::string fixture_path(const std::string& relative) {
    return std::string(TANDEM_TEST_FIXTURES_DIR) + "/" + relative;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        ADD_FAILURE() << "cannot open " << path;
        return {};
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string read_fixture(const std::string& relative) {
    std::string data = read_file(fixture_path(relative));
    if (relative.size() < 4 || relative.compare(relative.size() - 4, 4, ".zst") != 0) return data;
    unsigned long long size = ZSTD_getFrameContentSize(data.data(), data.size());
    if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
        ADD_FAILURE() << relative << ": not a zstd frame with a known size";
        return {};
    }
    std::string out(size, '\0');
    size_t got = ZSTD_decompress(out.data(), out.size(), data.data(), data.size());
    if (ZSTD_isError(got) || got != size) {
        ADD_FAILURE() << relative << ": zstd decompression failed";
        return {};
    }
    return out;
}

namespace {
std::mutex g_dirs_mutex;
std::vector<std::string>* g_dirs = nullptr;
void remove_dirs() {
    std::lock_guard<std::mutex> lock(g_dirs_mutex);
    if (!g_dirs) return;
    std::error_code ec;
    for (const auto& d : *g_dirs) std::filesystem::remove_all(d, ec);
}
}  // namespace

std::string make_temp_dir(const std::string& tag) {
    std::string templ = (std::filesystem::temp_directory_path() / ("tandem-test-" + tag + "-XXXXXX")).string();
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    const char* dir = mkdtemp(buf.data());
    if (!dir) {
        ADD_FAILURE() << "mkdtemp failed for " << templ;
        return {};
    }
    std::lock_guard<std::mutex> lock(g_dirs_mutex);
    if (!g_dirs) {
        g_dirs = new std::vector<std::string>();
        std::atexit(remove_dirs);
    }
    g_dirs->push_back(dir);
    return dir;
}

}  // namespace tdm::test
