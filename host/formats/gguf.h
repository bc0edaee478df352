/* SPDX-License-Identifier: Apache-2.0 */
// host/formats/gguf.h: GGUF v2/v3 reader (docs/formats/gguf.md Part A). Maps the file, checks
// every count, size and offset against the mapping before use, and exposes metadata
// and tensor infos that point into the mapping (no copies of tensor data).
// Files are untrusted: anything malformed is an Error naming the file and the problem.
// Not here: deciding whether tandem can compute with a tensor's type (the model
// loader's job), big-endian files (refused), split files (each shard is one GgufFile).
#pragma once

#include "common/error.h"
#include "formats/mapped_file.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tdm {

enum class GgufType : uint32_t {
    UINT8 = 0,
    INT8 = 1,
    UINT16 = 2,
    INT16 = 3,
    UINT32 = 4,
    INT32 = 5,
    FLOAT32 = 6,
    BOOL = 7,
    STRING = 8,
    ARRAY = 9,
    UINT64 = 10,
    INT64 = 11,
    FLOAT64 = 12,
};

// "UINT32", "STRING", ...; "invalid" for ids outside the enum.
std::string_view gguf_type_name(GgufType t);

// Bytes of one scalar of type t; 0 for STRING/ARRAY (variable size) and invalid ids.
uint32_t gguf_scalar_size(GgufType t);

// One metadata value. All pointers point into the file mapping.
struct GgufValue {
    GgufType type;       // ARRAY for arrays, else the scalar type
    GgufType elem_type;  // element type of an array; equal to `type` for a scalar
    uint64_t count;      // elements of an array; 1 for a scalar
    const uint8_t* data; // scalar: its bytes; STRING: its characters (no length prefix);
                         // ARRAY: the first element's encoding (strings keep their
                         // uint64 length prefixes, so use gguf_string_elements())
    uint64_t nbytes;     // bytes at `data`
};

struct GgufKV {
    std::string key;
    GgufValue value;
};

struct GgufTensorInfo {
    std::string name;
    uint32_t n_dims;       // 1..4
    int64_t ne[4];         // ne[0] innermost; dims past n_dims are 1
    uint32_t type;         // ggml type id (possibly one tandem cannot compute with)
    uint64_t offset;       // relative to the data section, as stored in the file
    uint64_t file_offset;  // data_offset() + offset
    uint64_t nbytes;
};

// Views of the elements of a STRING array (or the one string of a STRING scalar),
// pointing into the mapping. Empty for any other type. The value must come from a
// GgufFile, which has already checked every length.
std::vector<std::string_view> gguf_string_elements(const GgufValue& v);

class GgufCursor;  // gguf.cpp: bounds-checked reads over the mapping

class GgufFile {
public:
    static Result<std::unique_ptr<GgufFile>> open(const std::string& path);
    // Parses bytes held in memory (tests, fuzzing); `name` stands in for the path.
    static Result<std::unique_ptr<GgufFile>> from_memory(std::string name, std::string bytes);
    // Parses an already mapped file (ModelSource maps once to sniff the format).
    static Result<std::unique_ptr<GgufFile>> from_mapping(std::unique_ptr<MappedFile> file);

    const std::string& path() const { return file_->path(); }
    uint32_t version() const { return version_; }
    uint64_t alignment() const { return alignment_; }
    uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
    const MappedFile& file() const { return *file_; }

    // ---- metadata ------------------------------------------------------------
    const std::vector<GgufKV>& kvs() const { return kvs_; }
    const GgufValue* find(std::string_view key) const;  // nullptr if absent

    // Typed getters. An absent key, a value of the wrong type, or a value out of the
    // result's range is an Error naming the file, the key, and the expected and found
    // types. Integers accept any integer type (UINT8..INT64); floats FLOAT32/FLOAT64.
    Result<std::string> get_string(std::string_view key) const;
    Result<uint64_t> get_uint(std::string_view key) const;  // negative values refused
    Result<int64_t> get_int(std::string_view key) const;
    Result<double> get_float(std::string_view key) const;
    Result<bool> get_bool(std::string_view key) const;      // non-zero byte = true
    Result<std::vector<std::string>> get_string_array(std::string_view key) const;
    Result<std::vector<int64_t>> get_int_array(std::string_view key) const;
    Result<std::vector<double>> get_float_array(std::string_view key) const;
    // ARRAY of BOOL (one byte per element, e.g. gemma4.attention.sliding_window_pattern).
    // Like get_bool and llama.cpp's reader, any non-zero byte is true: the spec's "0 or 1"
    // is not enforced, so every file llama.cpp loads loads here too.
    Result<std::vector<bool>> get_bool_array(std::string_view key) const;

    // Same, but an absent key yields `dflt`. A present key of the wrong type is still
    // an error: a file that says something we cannot read must not be silently ignored.
    Result<std::string> get_string_or(std::string_view key, std::string dflt) const;
    Result<uint64_t> get_uint_or(std::string_view key, uint64_t dflt) const;
    Result<int64_t> get_int_or(std::string_view key, int64_t dflt) const;
    Result<double> get_float_or(std::string_view key, double dflt) const;
    Result<bool> get_bool_or(std::string_view key, bool dflt) const;

    // ---- tensors -------------------------------------------------------------
    const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
    const GgufTensorInfo* find_tensor(std::string_view name) const;  // nullptr if absent
    const uint8_t* tensor_data(const GgufTensorInfo& t) const { return file_->data() + t.file_offset; }
    // Drops the tensor's file pages from RSS once it has been uploaded (MappedFile).
    void release_pages(const GgufTensorInfo& t) const { file_->release_pages(t.file_offset, t.nbytes); }

private:
    GgufFile() = default;
    Status parse();
    Status parse_metadata(GgufCursor& c, uint64_t kv_count);
    Status parse_tensor_infos(GgufCursor& c, uint64_t tensor_count);
    Status check_tensor_ranges();
    Error key_error(std::string_view key, std::string_view expected, const GgufValue* found) const;

    std::unique_ptr<MappedFile> file_;
    uint32_t version_ = 0;
    uint64_t alignment_ = 32;
    uint64_t data_offset_ = 0;
    std::vector<GgufKV> kvs_;
    std::vector<GgufTensorInfo> tensors_;
    // Keyed by views into the mapping, which lives as long as this object.
    std::unordered_map<std::string_view, size_t> kv_index_;
    std::unordered_map<std::string_view, size_t> tensor_index_;
};

}  // namespace tdm
