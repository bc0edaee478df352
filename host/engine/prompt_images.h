/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/prompt_images.h: the images of one prompt, where their rows sit among the
// prompt's tokens and the rotary positions that follows from them (tdm.encoder).
//
// A prompt with images holds, per image, n_rows placeholder tokens in a row; the target
// reads that image's encoder rows there instead of the placeholder's embedding. KV slots
// stay token indices; rotary positions do not: the rows of an image starting at token
// index i sit at p + (t, h, w) where p is the position token i would have had, and the
// text after the image continues at p + advance (GLM-4V: advance = max(grid_h, grid_w) / 2
// where the image took grid_h * grid_w / 4 tokens). Every later token is shifted by the
// sum of (advance - n_rows) of the images before it.
// Not here: encoding (model/encoder.h), the engine's use (engine/batch_engine.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "common/error.h"
#include "model/encoder.h"

namespace tdm {

struct PromptImage {
    uint32_t first = 0;  // token index of its first placeholder
    EncodedImage encoded;
};

class PromptImages {
public:
    // `prompt` holds, for each image in order, exactly one token `image_token` standing for
    // it; the result is the prompt with each of those repeated once per encoder row of its
    // image, and the images placed there. More or fewer placeholders than images: an error.
    static Result<PromptImages> expand(std::span<const int32_t> prompt, int32_t image_token,
                                       std::vector<EncodedImage> images, std::vector<int32_t>* expanded);

    // The rotary position (t, h, w, 0) of token index i of the prompt or of what follows it.
    std::array<int32_t, 4> position4(uint32_t i) const;
    // The image row that replaces token i's embedding, or null (a text token).
    const float* row(uint32_t i) const;
    // The index of the first image row (no image: UINT32_MAX). KV before it is plain text.
    uint32_t first_row() const { return images_.empty() ? UINT32_MAX : images_.front().first; }
    // Whether [begin, end) holds an image row.
    bool has_rows(uint32_t begin, uint32_t end) const;
    uint32_t n_embd() const { return n_embd_; }
    std::span<const PromptImage> images() const { return images_; }

private:
    std::vector<PromptImage> images_;
    std::vector<int32_t> shift_after_;  // [k]: the position shift of tokens after image k
    uint32_t n_embd_ = 0;
};

}  // namespace tdm
