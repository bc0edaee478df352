/* SPDX-License-Identifier: Apache-2.0 */
// host/image/image_positions.h: the 3-D rotary positions (t, h, w) of a prompt that holds
// images, by GLM-4V's rule (transformers' Glm4vModel.get_rope_index; docs/models/glm-ocr.md §2.2),
// which Qwen2-VL shares for still images. Walking the prompt with a running position p:
//   - a text token (the image's begin/end markers included) gets (p, p, p), then p += 1;
//   - an image of gh x gw merged cells fills its gh * gw placeholder tokens in row-major
//     order with (p, p + row, p + col), then p += max(gh, gw);
//   - generated tokens go on from the final p with (p, p, p).
// So positions after an image are smaller than token indices: a sequence's position and
// its length differ by `next - tokens.size()` (HF's rope_deltas).
//
// Usage:
//   ImagePositions pos = TDM_TRY(image_positions(prompt, kImageToken, grids, 2));
//   // pos.t[i], pos.h[i], pos.w[i] for prompt token i; pos.next for the first generated one
#pragma once

#include "common/error.h"

#include <cstdint>
#include <span>
#include <vector>

namespace tdm {

struct ImageGrid {
    uint32_t grid_t = 1;  // temporal patch groups (1 for a still image)
    uint32_t grid_h = 0;  // patches down, before merging
    uint32_t grid_w = 0;  // patches across, before merging
};

struct ImagePositions {
    std::vector<int32_t> t, h, w;  // one per prompt token
    int64_t next = 0;              // position of the first token after the prompt
};

// Each maximal run of `image_token` in `tokens` is one image, in the order of `images`,
// and must hold exactly (grid_h / merge) * (grid_w / merge) tokens; errors say which
// image does not match, or that the counts of runs and images differ.
Result<ImagePositions> image_positions(std::span<const int32_t> tokens, int32_t image_token,
                                       std::span<const ImageGrid> images, uint32_t merge_size);

}  // namespace tdm
