/* SPDX-License-Identifier: Apache-2.0 */
// host/formats/model_source.h: the one view of a model file that the model loader
// uses, whatever the container: a GGUF file (detected by its magic, not its name), a
// .safetensors file, or a Hugging Face directory (config.json + model.safetensors or
// model.safetensors.index.json + shards).
// Not here: mapping tensor names onto an architecture's weights, type conversion, or
// refusing types tandem cannot compute with (the loader does those with this view).
#pragma once

#include "common/error.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tdm {

enum class SourceFormat { gguf, safetensors };

std::string_view source_format_name(SourceFormat f);  // "gguf", "safetensors"

struct SourceTensor {
    std::string name;      // as stored: GGUF names ("blk.0.attn_q.weight") or HF names
    uint32_t type;         // ggml type id; kNoGgmlType for a safetensors dtype without one
    int n_dims;            // 1..4
    int64_t ne[4];         // ggml order, ne[0] innermost; unused dims 1
    const uint8_t* data;   // in the read-only mapping
    uint64_t nbytes;
    std::string dtype;     // the container's own spelling: ggml name ("q4_K", "iq2_xxs") for
                           // GGUF, header dtype ("BF16", "F8_E4M3") for safetensors
    const MappedFile* file;  // the mapping holding `data` (for release_pages)
};

class ModelSource {
public:
    // Errors: the path does not exist; a directory without safetensors; a file that is
    // neither format (the message lists what is accepted); or the format's own errors.
    static Result<std::unique_ptr<ModelSource>> open(const std::string& path);

    SourceFormat format() const { return format_; }
    const std::string& path() const { return path_; }

    // general.architecture for GGUF; config.json "model_type" for safetensors (the
    // top-level one, also for multimodal wrappers that nest a text_config). "" when
    // the file does not say.
    std::string architecture() const { return architecture_; }
    // The names a draft head's file may go by: architecture(), then for safetensors each string
    // of config.json "architectures". A head's HF directory often says model_type "llama" and
    // names itself only there (EAGLE-3's LlamaForCausalLMEagle3, DFlash's DFlashDraftModel).
    const std::vector<std::string>& architecture_names() const { return architecture_names_; }

    const std::vector<SourceTensor>& tensors() const { return tensors_; }
    const SourceTensor* find(std::string_view name) const;  // nullptr if absent

    const GgufFile* gguf() const { return gguf_.get(); }                // null for safetensors
    const SafetensorsModel* safetensors() const { return st_.get(); }   // null for GGUF
    // config.json of a safetensors model; null for GGUF or when it is missing/invalid
    // (safetensors()->config() says why).
    const nlohmann::json* hf_config() const;

    // Drops the tensor's file pages from RSS after it was copied to the device.
    void release_pages(const SourceTensor& t) const;
    uint64_t file_bytes() const;  // total size of the file(s)

private:
    ModelSource() = default;
    void add_gguf_tensors();
    void add_safetensors_tensors();

    SourceFormat format_ = SourceFormat::gguf;
    std::string path_;
    std::string architecture_;
    std::vector<std::string> architecture_names_;
    std::unique_ptr<GgufFile> gguf_;
    std::unique_ptr<SafetensorsModel> st_;
    std::vector<SourceTensor> tensors_;
    std::unordered_map<std::string_view, size_t> index_;  // views of tensors_[i].name
};

}  // namespace tdm
