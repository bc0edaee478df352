// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/fuzz_support.cpp
#include "fuzz_support.h"

#include <zstd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace tdm::fuzz {

void check_failed(const char* what, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", file, line, what);
    std::abort();
}

std::vector<std::string_view> split_parts(const uint8_t* data, size_t size, size_t n) {
    std::string_view rest = as_text(data, size);
    std::vector<std::string_view> parts;
    while (parts.size() + 1 < n) {
        const size_t nul = rest.find('\0');
        if (nul == std::string_view::npos) break;
        parts.push_back(rest.substr(0, nul));
        rest.remove_prefix(nul + 1);
    }
    parts.push_back(rest);
    parts.resize(n);
    return parts;
}

namespace {

struct ScratchDir {
    std::string path;
    ScratchDir() {
        std::string templ = (std::filesystem::temp_directory_path() / "tandem-fuzz-XXXXXX").string();
        if (!mkdtemp(templ.data())) {
            std::perror("tandem fuzz: mkdtemp");
            std::abort();
        }
        path = templ;
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

}  // namespace

const std::string& scratch_dir() {
    static ScratchDir dir;
    return dir.path;
}

std::string write_scratch_file(const std::string& name, std::string_view bytes) {
    const std::string path = scratch_dir() + "/" + name;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) {
        std::fprintf(stderr, "tandem fuzz: cannot write %s\n", path.c_str());
        std::abort();
    }
    return path;
}

std::string read_file_or_die(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    if (!in) {
        std::fprintf(stderr, "tandem fuzz: cannot read %s\n", path.c_str());
        std::abort();
    }
    return ss.str();
}

std::string fixture_path(const std::string& relative) { return std::string(TANDEM_TEST_FIXTURES_DIR) + "/" + relative; }

std::string read_fixture_or_die(const std::string& relative) {
    const std::string path = fixture_path(relative);
    std::string bytes = read_file_or_die(path);
    if (!path.ends_with(".zst")) return bytes;
    const unsigned long long n = ZSTD_getFrameContentSize(bytes.data(), bytes.size());
    if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN) {
        std::fprintf(stderr, "tandem fuzz: %s is not a zstd frame with a known size\n", path.c_str());
        std::abort();
    }
    std::string out(n, '\0');
    const size_t got = ZSTD_decompress(out.data(), out.size(), bytes.data(), bytes.size());
    if (ZSTD_isError(got) || got != n) {
        std::fprintf(stderr, "tandem fuzz: cannot decompress %s\n", path.c_str());
        std::abort();
    }
    return out;
}

bool is_valid_utf8(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
        const auto b = uint8_t(s[i]);
        size_t len = 0;
        uint32_t cp = 0;
        if (b < 0x80) {
            ++i;
            continue;
        } else if ((b & 0xE0) == 0xC0) {
            len = 2, cp = b & 0x1F;
        } else if ((b & 0xF0) == 0xE0) {
            len = 3, cp = b & 0x0F;
        } else if ((b & 0xF8) == 0xF0) {
            len = 4, cp = b & 0x07;
        } else {
            return false;
        }
        if (i + len > s.size()) return false;
        for (size_t k = 1; k < len; ++k) {
            const auto c = uint8_t(s[i + k]);
            if ((c & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (c & 0x3F);
        }
        static constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < kMinForLength[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += len;
    }
    return true;
}

}  // namespace tdm::fuzz
