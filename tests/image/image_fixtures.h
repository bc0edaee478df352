/* SPDX-License-Identifier: Apache-2.0 */
// tests/image/image_fixtures.h: reading tests/fixtures/images (made by its make_golden.py
// with PIL and numpy) and building hostile variants of those files.
#pragma once

#include "support/fixtures.h"

#include <cstdint>
#include <string>
#include <vector>

namespace tdm::test {

inline std::string image_fixture_path(const std::string& name) { return fixture_path("images/" + name); }

inline std::vector<uint8_t> image_fixture(const std::string& name) {
    const std::string bytes = read_fixture("images/" + name);
    return {bytes.begin(), bytes.end()};
}

// PNG's chunk checksum (CRC-32, polynomial 0xEDB88320), for chunks a test rewrites.
inline uint32_t png_crc(const uint8_t* p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

inline void put_be32(uint8_t* p, uint32_t v) {
    p[0] = uint8_t(v >> 24);
    p[1] = uint8_t(v >> 16);
    p[2] = uint8_t(v >> 8);
    p[3] = uint8_t(v);
}

// A PNG whose IHDR claims width x height, with a valid checksum (the IHDR is the first chunk).
inline std::vector<uint8_t> png_with_size(std::vector<uint8_t> png, uint32_t width, uint32_t height) {
    put_be32(&png[16], width);
    put_be32(&png[20], height);
    put_be32(&png[29], png_crc(&png[12], 17));
    return png;
}

}  // namespace tdm::test
