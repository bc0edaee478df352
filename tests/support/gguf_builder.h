/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/gguf_builder.h: GGUF bytes assembled field by field, for tests that
// need files no well-behaved writer produces (truncated, hostile, odd versions), and
// a small valid model for tests that only need "some GGUF".
// Not here: the real writer (host/writers/gguf_writer.h), which refuses bad input.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::test {

// Appends little-endian fields in call order. Nothing is validated.
class GgufBuilder {
public:
    GgufBuilder& u8(uint8_t v) { return put(v); }
    GgufBuilder& u32(uint32_t v) { return put(v); }
    GgufBuilder& u64(uint64_t v) { return put(v); }
    GgufBuilder& i64(int64_t v) { return put(v); }
    GgufBuilder& f32(float v) { return put(v); }
    GgufBuilder& raw(std::string_view bytes);
    GgufBuilder& zeros(size_t n);
    GgufBuilder& str(std::string_view s);  // uint64 length + bytes

    // "GGUF", version, tensor count, metadata entry count.
    GgufBuilder& header(uint32_t version, uint64_t n_tensors, uint64_t n_kv);
    GgufBuilder& kv_u32(std::string_view key, uint32_t v);
    GgufBuilder& kv_string(std::string_view key, std::string_view v);
    // One tensor-info record with ne.size() dims.
    GgufBuilder& tensor_info(std::string_view name, const std::vector<int64_t>& ne, uint32_t type,
                             uint64_t offset);
    GgufBuilder& pad_to(uint64_t alignment);  // zeros up to a multiple of alignment

    size_t size() const { return bytes_.size(); }
    const std::string& bytes() const { return bytes_; }

private:
    template <class T>
    GgufBuilder& put(T v) {
        bytes_.append(reinterpret_cast<const char*>(&v), sizeof(T));
        return *this;
    }
    std::string bytes_;
};

// A small valid GGUF v3 model made by GgufWriter: general.architecture = "llama",
// scalars of several types, a string array, an int32 array, and two tensors:
// "tok_embd" F32 ne = (8, 4) holding 0..31 and "blk.0.w" Q8_0 ne = (32, 2).
std::string small_valid_gguf();

}  // namespace tdm::test
