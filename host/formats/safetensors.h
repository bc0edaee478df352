/* SPDX-License-Identifier: Apache-2.0 */
// host/formats/safetensors.h: Hugging Face safetensors reader (docs/formats/gguf.md Part B):
// one .safetensors file, or a model directory holding model.safetensors or
// model.safetensors.index.json plus its shards, and the directory's config.json.
// Every header is validated against its file before any tensor is exposed; tensor
// data points into the read-only mappings.
// Not here: mapping HF tensor names to GGUF names or converting dtypes (plugins do
// that); the unified GGUF/safetensors view (model_source.h).
#pragma once

#include "common/error.h"
#include "formats/ggml_types.h"
#include "formats/mapped_file.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tdm {

struct SafetensorsTensor {
    std::string name;
    std::string dtype;           // as written in the header: "BF16", "F8_E4M3", ...
    uint32_t ggml_type;          // F32/F16/BF16/I32/I16/I8; kNoGgmlType for other dtypes
    std::vector<int64_t> shape;  // HF order, outermost first; [] for a scalar
    int n_dims;                  // dims of the ggml view below, 1..4
    int64_t ne[4];               // ggml order: reversed shape, unused dims 1. A shape of
                                 // more than 4 dims folds its outer dims into ne[3].
    const uint8_t* data;
    uint64_t nbytes;
    uint32_t shard;              // index of the file holding it (see shard())
};

// Bits per element of a safetensors dtype string; 0 if unknown.
uint32_t safetensors_dtype_bits(std::string_view dtype);

// Parses and validates the header of one mapped safetensors file. Tensors come back
// in the order of their data in the file; `shard` is stored in each record.
Result<std::vector<SafetensorsTensor>> parse_safetensors(const MappedFile& file, uint32_t shard);

// Cheap check of the first bytes (header length, then '{'), used to detect the format.
bool looks_like_safetensors(const MappedFile& file);

class SafetensorsModel {
public:
    // `path` is a .safetensors file or a directory (model.safetensors.index.json is
    // preferred over model.safetensors when both exist).
    static Result<std::unique_ptr<SafetensorsModel>> open(const std::string& path);
    ~SafetensorsModel();
    // A single already mapped file (ModelSource maps once to sniff the format).
    static Result<std::unique_ptr<SafetensorsModel>> from_mapping(std::unique_ptr<MappedFile> file);

    const std::string& path() const { return path_; }
    const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
    const SafetensorsTensor* find(std::string_view name) const;

    size_t shard_count() const { return shards_.size(); }
    const MappedFile& shard(uint32_t i) const { return *shards_[i]; }
    uint64_t file_bytes() const;  // sum of the shard sizes
    void release_pages(const SafetensorsTensor& t) const;

    // config.json of the directory (or next to a single file). Missing or invalid
    // (not JSON, not an object) is an error naming the config path.
    Result<const nlohmann::json*> config() const;
    const std::string& config_path() const { return config_path_; }

private:
    SafetensorsModel();
    Status add_shard(std::unique_ptr<MappedFile> file);
    Status load_index(const std::string& dir, const std::string& index_path);
    void load_config(const std::string& dir);
    void build_index();

    std::string path_;
    std::vector<std::unique_ptr<MappedFile>> shards_;
    std::vector<SafetensorsTensor> tensors_;
    std::unordered_map<std::string_view, size_t> index_;  // views of tensors_[i].name
    std::string config_path_;
    std::unique_ptr<nlohmann::json> config_;  // held by pointer so that this header needs only json_fwd
    Error config_error_;
    bool config_ok_ = false;
};

}  // namespace tdm
