/* SPDX-License-Identifier: Apache-2.0 */
// host/writers/gguf_writer.h: writes GGUF v3 files laid out the way gguf-py does
// (docs/formats/gguf.md A.2-A.5, A.8): header, metadata in insertion order, tensor infos in
// insertion order, zero padding to the alignment, then each tensor's data padded to the
// alignment. Used by tests and by synthesizers (`tandem synth`), which write models of
// hundreds of MB, so write_file() streams tensor data instead of building the file in memory.
// Not here: reading (gguf.h); quantizing data (the caller passes encoded bytes).
//
// Mistakes in what is added (a duplicate key or tensor name, a bad alignment) are
// recorded and returned by write_file()/to_bytes(); add_tensor() also returns its own
// error at once, since its checks (type, dims, byte count) depend on caller data.
#pragma once

#include "common/error.h"
#include "formats/gguf.h"

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tdm {

class GgufWriter {
public:
    GgufWriter() = default;

    // ---- metadata (written in the order added) --------------------------------
    void add_u8(std::string_view key, uint8_t v);
    void add_i8(std::string_view key, int8_t v);
    void add_u16(std::string_view key, uint16_t v);
    void add_i16(std::string_view key, int16_t v);
    void add_u32(std::string_view key, uint32_t v);  // "general.alignment" also sets the alignment
    void add_i32(std::string_view key, int32_t v);
    void add_u64(std::string_view key, uint64_t v);
    void add_i64(std::string_view key, int64_t v);
    void add_f32(std::string_view key, float v);
    void add_f64(std::string_view key, double v);
    void add_bool(std::string_view key, bool v);
    void add_string(std::string_view key, std::string_view v);  // any bytes, NULs included

    void add_array(std::string_view key, const std::vector<uint8_t>& v);
    void add_array(std::string_view key, const std::vector<int8_t>& v);
    void add_array(std::string_view key, const std::vector<uint16_t>& v);
    void add_array(std::string_view key, const std::vector<int16_t>& v);
    void add_array(std::string_view key, const std::vector<uint32_t>& v);
    void add_array(std::string_view key, const std::vector<int32_t>& v);
    void add_array(std::string_view key, const std::vector<uint64_t>& v);
    void add_array(std::string_view key, const std::vector<int64_t>& v);
    void add_array(std::string_view key, const std::vector<float>& v);
    void add_array(std::string_view key, const std::vector<double>& v);
    void add_array(std::string_view key, const std::vector<bool>& v);
    void add_array(std::string_view key, const std::vector<std::string>& v);
    // Copies a value read from another GGUF file (any type, arrays included) as is.
    void add_value(std::string_view key, const GgufValue& v);

    // Sets the data alignment (a power of two) and writes it as general.alignment
    // (UINT32). Without it the default 32 applies and the key is not written.
    void set_alignment(uint32_t alignment);
    uint32_t alignment() const { return alignment_; }

    // ---- tensors (written in the order added) ---------------------------------
    // ne is in ggml order (ne[0] innermost, 1 to 4 dims); data holds exactly the
    // encoded bytes of that shape and type (checked against the ggml type table).
    // The name must be 1..63 bytes (what llama.cpp accepts).
    Status add_tensor(std::string name, uint32_t ggml_type, std::vector<int64_t> ne, const void* data,
                      size_t nbytes);
    // Same, taking ownership of the bytes (no copy; for large synthetic models).
    Status add_tensor(std::string name, uint32_t ggml_type, std::vector<int64_t> ne,
                      std::vector<uint8_t> data);

    // ---- output ---------------------------------------------------------------
    Status status() const;                          // first recorded mistake, if any
    Status write_file(const std::string& path) const;  // streams; removes the file on failure
    Result<std::string> to_bytes() const;           // the whole file in memory (tests)

private:
    struct Kv {
        std::string key;
        std::string encoded;  // value type (uint32) + value, as in the file
    };
    struct Tensor {
        std::string name;
        uint32_t type;
        std::vector<int64_t> ne;
        std::vector<uint8_t> data;
    };

    void add_encoded(std::string_view key, std::string encoded);
    template <class T>
    void add_scalar(std::string_view key, uint32_t type, T v);
    template <class T>
    void add_scalar_array(std::string_view key, uint32_t elem_type, const std::vector<T>& v);
    std::string encode_head() const;  // everything before the first tensor's data
    void fail(Error e);

    std::vector<Kv> kvs_;
    std::set<std::string, std::less<>> keys_;
    std::vector<Tensor> tensors_;
    std::set<std::string, std::less<>> tensor_names_;
    uint32_t alignment_ = 32;
    Error first_error_;
    bool failed_ = false;
};

}  // namespace tdm
