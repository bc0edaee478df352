/* SPDX-License-Identifier: Apache-2.0 */
// tests/formats/safetensors_builder.h: small safetensors files written by the tests
// themselves (no fixtures, no Python): a well-formed file from a tensor list, or raw
// header JSON + buffer for files that must be malformed.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace tdm::test {

struct StTensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    std::string data;  // exactly the bytes of the tensor
};

// 8-byte header length + header + buffer, the header padded with spaces to a multiple
// of 8 as the reference writer does.
inline std::string safetensors_raw(std::string header, const std::string& buffer) {
    while (header.size() % 8 != 0) header.push_back(' ');
    std::string out(8, '\0');
    uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) out[size_t(i)] = char(n >> (8 * i));
    return out + header + buffer;
}

// Tensors back to back in list order; `metadata` becomes __metadata__ if not null.
inline std::string safetensors_bytes(const std::vector<StTensor>& tensors,
                                     const nlohmann::json& metadata = nullptr) {
    nlohmann::json header = nlohmann::json::object();
    if (!metadata.is_null()) header["__metadata__"] = metadata;
    std::string buffer;
    for (const StTensor& t : tensors) {
        header[t.name] = {{"dtype", t.dtype},
                          {"shape", t.shape},
                          {"data_offsets", {buffer.size(), buffer.size() + t.data.size()}}};
        buffer += t.data;
    }
    return safetensors_raw(header.dump(), buffer);
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

// n bytes of a recognisable pattern.
inline std::string byte_pattern(size_t n, int seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = char(seed * 37 + int(i) * 11);
    return s;
}

}  // namespace tdm::test
