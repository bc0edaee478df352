/* SPDX-License-Identifier: Apache-2.0 */
// host/writers/safetensors_writer.h: writes Hugging Face safetensors files (docs/formats/gguf.md
// Part B) laid out the way the reference Rust writer does: an 8-byte header length, the JSON
// header (__metadata__ first, then the tensors in data order) padded with spaces to a multiple
// of 8 bytes, then the tensors back to back, ordered by dtype size (largest first) and then by
// name. Optionally sharded into model-0000i-of-0000n.safetensors plus
// model.safetensors.index.json, as transformers' save_pretrained does.
// Tensor bytes may be given up front or produced at write time by a callback, so that
// checkpoints of a few GB are streamed one tensor at a time instead of held in memory.
// Not here: reading (safetensors.h); converting values (the caller passes encoded bytes).
//
//   SafetensorsWriter w;
//   w.add_metadata("format", "pt");
//   TDM_TRY(w.add_tensor("model.norm.weight", "F32", {1024}, bytes.data(), bytes.size()));
//   TDM_TRY(w.write_file(dir + "/model.safetensors"));
#pragma once

#include "common/error.h"

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tdm {

class SafetensorsWriter {
public:
    // Fills exactly the tensor's byte count at dst; called once per write.
    using Fill = std::function<Status(uint8_t* dst)>;

    // String-to-string entries of __metadata__ (e.g. "format": "pt").
    void add_metadata(std::string key, std::string value);

    // dtype is a header spelling ("F32", "BF16", "I64", ...); shape is HF order (outermost
    // first, [] for a scalar). Errors: unknown dtype, duplicate or empty name, the name
    // "__metadata__", byte count not matching shape x dtype.
    Status add_tensor(std::string name, std::string dtype, std::vector<int64_t> shape, const void* data,
                      size_t nbytes);
    Status add_tensor(std::string name, std::string dtype, std::vector<int64_t> shape,
                      std::vector<uint8_t> data);
    // The bytes are produced by `fill` when the file is written.
    Status add_tensor(std::string name, std::string dtype, std::vector<int64_t> shape, Fill fill);

    // One file. Removes it again if anything fails.
    Status write_file(const std::string& path) const;
    // The whole file in memory (tests).
    Result<std::string> to_bytes() const;

    // Several files in `dir`: tensors in data order, a new shard whenever the next tensor
    // would push the current one past max_shard_bytes (a larger tensor gets a shard of its
    // own), named <prefix>-0000i-of-0000n.safetensors, plus <prefix>.safetensors.index.json
    // ({"metadata": {"total_size": N}, "weight_map": {name: file}}). Every shard carries the
    // __metadata__ entries.
    Status write_sharded(const std::string& dir, uint64_t max_shard_bytes,
                         std::string_view prefix = "model") const;

    size_t tensor_count() const { return tensors_.size(); }
    uint64_t data_bytes() const;  // sum of all tensor byte counts

private:
    struct Tensor {
        std::string name;
        std::string dtype;
        uint32_t bits;
        std::vector<int64_t> shape;
        uint64_t nbytes;
        std::vector<uint8_t> data;  // used when fill is empty
        Fill fill;
    };
    using Sink = std::function<Status(const void* p, size_t n)>;

    Status check_new(const std::string& name, const std::string& dtype, const std::vector<int64_t>& shape,
                     uint32_t* bits, uint64_t* nbytes) const;
    std::vector<const Tensor*> data_order() const;
    std::string encode_header(const std::vector<const Tensor*>& tensors) const;
    Status emit(const std::vector<const Tensor*>& tensors, const Sink& sink) const;
    Status write_one(const std::string& path, const std::vector<const Tensor*>& tensors) const;

    std::vector<Tensor> tensors_;
    std::set<std::string, std::less<>> names_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace tdm
