/* SPDX-License-Identifier: Apache-2.0 */
// host/image/patch_processor.h: an image turned into the vision encoder's input patches, as
// the GLM-4V / GLM-OCR image processor does it (transformers' Glm46VImageProcessor, PIL
// backend; Qwen2-VL's processor has the same shape):
//   1. smart resize: both sides to multiples of patch * merge, the pixel count, counted
//      over temporal_patch_size frames, kept within [min_pixels, max_pixels];
//   2. PIL bicubic resize (image_resize.h);
//   3. x / 255 then (x - mean) / std per channel, in float32 as numpy does it;
//   4. patches of channel x temporal x patch x patch values (a still image fills every
//      temporal frame with itself), emitted in merge-block order: block row, block column,
//      row within the block, column within the block.
//
// Usage:
//   PatchProcessorConfig cfg = TDM_TRY(patch_config_from_json(preprocessor_json));
//   ImagePatches p = TDM_TRY(make_patches(page, cfg));
//   // p.rows() patches of p.patch_values() floats; p.merged_tokens() placeholder tokens
#pragma once

#include "image/image.h"

#include <array>
#include <string_view>

namespace tdm {

struct PatchProcessorConfig {
    uint32_t patch_size = 14;
    uint32_t merge_size = 2;
    uint32_t temporal_patch_size = 2;
    // GLM-OCR's preprocessor_config.json ("size": shortest_edge / longest_edge), counted
    // over temporal_patch_size frames: a still page gets half of each.
    uint64_t min_pixels = 12544;
    uint64_t max_pixels = 9633792;
    double rescale_factor = 1.0 / 255.0;
    std::array<float, 3> mean = {0.48145466f, 0.4578275f, 0.40821073f};  // OpenAI CLIP
    std::array<float, 3> std = {0.26862954f, 0.26130258f, 0.27577711f};
};

// The fields of a Hugging Face preprocessor_config.json that are present replace those of
// `base` (GLM-OCR's defaults unless given); "size" may give shortest_edge/longest_edge or min_pixels/max_pixels.
Result<PatchProcessorConfig> patch_config_from_json(std::string_view json_text,
                                                   const PatchProcessorConfig& base = {});

struct ResizedSize {
    uint32_t height = 0;
    uint32_t width = 0;
};

// transformers' smart_resize for GLM-4V: Python's rounding (half to even) and float
// arithmetic reproduced. Errors for an aspect ratio over 200.
Result<ResizedSize> smart_resize(uint32_t height, uint32_t width, const PatchProcessorConfig& cfg);

struct ImagePatches {
    uint32_t grid_t = 1;  // temporal groups: 1 for a still image
    uint32_t grid_h = 0;  // patches down
    uint32_t grid_w = 0;  // patches across
    uint32_t merge_size = 2;
    uint32_t values_per_patch = 0;  // 3 * temporal * patch * patch
    std::vector<float> values;      // rows() * values_per_patch

    uint32_t rows() const { return grid_t * grid_h * grid_w; }
    // The language-model tokens the image becomes (one per merge block).
    uint32_t merged_tokens() const { return rows() / (merge_size * merge_size); }
};

// Steps 1-4 above on a decoded image.
Result<ImagePatches> make_patches(const Image& image, const PatchProcessorConfig& cfg);

// Steps 3-4 on an image already at its final size (sides multiples of patch * merge).
ImagePatches patches_of_resized(const Image& resized, const PatchProcessorConfig& cfg);

}  // namespace tdm
