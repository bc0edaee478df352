/* SPDX-License-Identifier: Apache-2.0 */
// host/model/encoder.h: an image encoder (tdm.encoder, tandem/ext/encoder.h) loaded for a
// target model: the plugin's encoder object, its weights, and its compiled graphs, one per
// image grid. encode() turns the patches of one image (host/image/patch_processor.h lays
// them out) into the rows that replace the image's placeholder tokens, and the rotary
// positions of those rows. Not here: decoding and resizing images (host/image/), putting
// the rows into a prompt (engine/prompt_images.h).
#pragma once

#include <tandem/ext/encoder.h>

#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "graph/executor.h"
#include "model/model.h"
#include "plugin/handles.h"

namespace tdm {

// One image through the encoder.
struct EncodedImage {
    uint32_t n_rows = 0;
    std::vector<float> rows;   // [n_rows][n_embd]
    std::vector<int32_t> thw;  // [n_rows][3]: (t, h, w) relative to the image's first position
    int32_t advance = 0;       // the text after the image continues at first position + advance
    double encode_ms = 0;      // the graph's run (its build and compile, the first time, excluded)
};

class Encoder {
public:
    // The most patches of one image encode() takes (an image graph's inputs and activations
    // grow with them; GLM-OCR's own budget is 24,576).
    static constexpr uint32_t kMaxPatches = 1u << 20;

    // The encoder the plugins register for `target`'s architecture, with its weights from
    // `source`: the target's own source (an HF directory holding the tower) or a side
    // file (--mmproj). Errors name what is missing.
    static Result<std::unique_ptr<Encoder>> load(const Registry& registry, std::shared_ptr<const ModelSource> source,
                                                 const Model& target, vk::Device& device,
                                                 vk::PipelineManager& pipelines, bool check_weights = true);
    ~Encoder();
    Encoder(const Encoder&) = delete;
    Encoder& operator=(const Encoder&) = delete;

    const tdm_encoder_info& info() const { return info_; }
    const char* name() const { return entry_->desc->name; }
    uint32_t values_per_patch() const {
        return info_.in_channels * info_.temporal_patch * info_.patch_size * info_.patch_size;
    }
    uint64_t weight_bytes() const { return weights_->device_bytes(); }

    // The patches of one image: grid_t * grid_h * grid_w patches of values_per_patch()
    // values in merge-block order; grid_h and grid_w multiples of merge_size.
    Result<EncodedImage> encode(std::span<const float> patches, uint32_t grid_t, uint32_t grid_h, uint32_t grid_w);

private:
    Encoder() = default;
    struct Compiled {
        std::unique_ptr<CompiledGraph> cg;
        TensorId patches = 0, positions = 0, ranges = 0, rows = 0;
        uint64_t last_used = 0;
    };
    Result<Compiled*> graph(const tdm_encoder_batch& batch);

    const EncoderEntry* entry_ = nullptr;
    std::shared_ptr<const ModelSource> source_;
    tdm_model_source src_handle_;
    tdm_options options_;
    tdm_encoder_info info_{};
    void* obj_ = nullptr;
    std::unique_ptr<WeightStore> weights_;
    vk::Device* device_ = nullptr;
    vk::PipelineManager* pipelines_ = nullptr;
    std::map<std::tuple<uint32_t, uint32_t, uint32_t>, Compiled> cache_;  // by grid (t, h, w)
    uint64_t uses_ = 0;
};

}  // namespace tdm
