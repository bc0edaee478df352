// SPDX-License-Identifier: Apache-2.0
// host/image/image_positions.cpp: GLM-4V's 3-D positions of a prompt with images.
#include "image/image_positions.h"

#include <algorithm>
#include <limits>

namespace tdm {

Result<ImagePositions> image_positions(std::span<const int32_t> tokens, int32_t image_token,
                                       std::span<const ImageGrid> images, uint32_t merge_size) {
    if (merge_size == 0) return Error("image positions: merge size 0");
    ImagePositions out;
    out.t.reserve(tokens.size());
    out.h.reserve(tokens.size());
    out.w.reserve(tokens.size());
    int64_t p = 0;
    size_t image = 0;
    const auto push = [&](int64_t t, int64_t h, int64_t w) {
        out.t.push_back(int32_t(t));
        out.h.push_back(int32_t(h));
        out.w.push_back(int32_t(w));
    };
    for (size_t i = 0; i < tokens.size();) {
        if (tokens[i] != image_token) {
            push(p, p, p);
            ++p, ++i;
            continue;
        }
        size_t run = 0;
        while (i + run < tokens.size() && tokens[i + run] == image_token) ++run;
        if (image >= images.size())
            return Error::format("the prompt holds more images ({} or more runs of image tokens) than the {} given",
                                 image + 1, images.size());
        const ImageGrid& g = images[image];
        if (g.grid_t != 1)
            return Error::format("image {}: {} temporal groups; only still images (1) are supported", image + 1, g.grid_t);
        if (g.grid_h % merge_size || g.grid_w % merge_size || g.grid_h == 0 || g.grid_w == 0)
            return Error::format("image {}: a grid of {} x {} patches does not divide into {} x {} merge blocks",
                                 image + 1, g.grid_h, g.grid_w, merge_size, merge_size);
        const uint64_t gh = g.grid_h / merge_size, gw = g.grid_w / merge_size;
        if (run != gh * gw)
            return Error::format("image {}: the prompt has {} image tokens in a row where its {} x {} cells need {}",
                                 image + 1, run, gh, gw, gh * gw);
        for (uint64_t row = 0; row < gh; ++row)
            for (uint64_t col = 0; col < gw; ++col) push(p, p + int64_t(row), p + int64_t(col));
        p += int64_t(std::max(gh, gw));
        i += run;
        ++image;
        if (p > std::numeric_limits<int32_t>::max()) return Error("image positions: past the 32-bit position range");
    }
    if (image != images.size())
        return Error::format("the prompt has {} runs of image tokens but {} images were given", image, images.size());
    out.next = p;
    return out;
}

}  // namespace tdm
