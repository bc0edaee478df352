// SPDX-License-Identifier: Apache-2.0
// host/engine/prompt_images.cpp
#include "engine/prompt_images.h"

#include <algorithm>
#include <limits>

namespace tdm {

Result<PromptImages> PromptImages::expand(std::span<const int32_t> prompt, int32_t image_token,
                                          std::vector<EncodedImage> images, std::vector<int32_t>* expanded) {
    PromptImages out;
    expanded->clear();
    size_t next = 0;
    int64_t shift = 0;
    for (int32_t t : prompt) {
        if (t != image_token) {
            expanded->push_back(t);
            continue;
        }
        if (next == images.size())
            return Error::format("the prompt has more image places ({} tokens) than images ({})",
                                 std::count(prompt.begin(), prompt.end(), image_token), images.size());
        EncodedImage& img = images[next++];
        if (img.n_rows == 0 || img.rows.size() % img.n_rows || img.thw.size() != size_t(img.n_rows) * 3)
            return Error("an encoded image's rows and positions do not match");
        const uint32_t width = uint32_t(img.rows.size() / img.n_rows);
        if (out.n_embd_ && width != out.n_embd_) return Error("the prompt's images have rows of different widths");
        out.n_embd_ = width;
        PromptImage pi;
        pi.first = uint32_t(expanded->size());
        if (expanded->size() + img.n_rows > std::numeric_limits<int32_t>::max() / 2)
            return Error("the prompt with its images is too long");
        expanded->insert(expanded->end(), img.n_rows, image_token);
        shift += int64_t(img.advance) - int64_t(img.n_rows);
        if (shift < std::numeric_limits<int32_t>::min() / 2 || shift > std::numeric_limits<int32_t>::max() / 2)
            return Error("the images shift positions implausibly far");
        out.shift_after_.push_back(int32_t(shift));
        pi.encoded = std::move(img);
        out.images_.push_back(std::move(pi));
    }
    if (next != images.size())
        return Error::format("{} images but the prompt has {} image places (token {})", images.size(), next,
                             image_token);
    return out;
}

std::array<int32_t, 4> PromptImages::position4(uint32_t i) const {
    int32_t shift = 0;
    for (size_t k = 0; k < images_.size(); ++k) {
        const PromptImage& img = images_[k];
        if (i < img.first) break;
        if (i < img.first + img.encoded.n_rows) {
            const int32_t p = int32_t(img.first) + shift;
            const int32_t* thw = img.encoded.thw.data() + size_t(i - img.first) * 3;
            return {p + thw[0], p + thw[1], p + thw[2], 0};
        }
        shift = shift_after_[k];
    }
    const int32_t p = int32_t(i) + shift;
    return {p, p, p, 0};
}

const float* PromptImages::row(uint32_t i) const {
    for (const PromptImage& img : images_) {
        if (i < img.first) return nullptr;
        if (i < img.first + img.encoded.n_rows) return img.encoded.rows.data() + size_t(i - img.first) * n_embd_;
    }
    return nullptr;
}

bool PromptImages::has_rows(uint32_t begin, uint32_t end) const {
    for (const PromptImage& img : images_)
        if (img.first < end && begin < img.first + img.encoded.n_rows) return true;
    return false;
}

}  // namespace tdm
