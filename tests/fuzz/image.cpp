// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/image.cpp: the PNG and JPEG decoders (image/image.h) on arbitrary bytes, then
// what takes a decoded image: PIL-exact resizing and the GLM-4V patch preprocessing on a
// small pixel budget. A file is either refused with a message or decoded to exactly
// width * height RGB samples within the limits; the patches fill whole merge blocks.
// Seeds: tests/fuzz/corpus/image/ (PNG and JPEG variants from tests/fixtures/images).
#include "fuzz_support.h"
#include "image/image.h"
#include "image/patch_processor.h"

using namespace tdm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ImageLimits limits;
    limits.max_pixels = 1 << 20;  // room for odd shapes, not for memory exhaustion
    limits.max_jpeg_scans = 100;
    auto img = decode_image({data, size}, limits);
    if (!img.ok()) {
        FUZZ_CHECK(!img.error().message().empty());
        return 0;
    }
    FUZZ_CHECK(img->width > 0 && img->height > 0);
    FUZZ_CHECK(uint64_t(img->width) * img->height <= limits.max_pixels);
    FUZZ_CHECK(img->rgb.size() == size_t(img->width) * img->height * 3);

    PatchProcessorConfig cfg;
    cfg.min_pixels = 2 * 28 * 28;
    cfg.max_pixels = 2 * 28 * 28 * 16;
    auto patches = make_patches(*img, cfg);
    if (!patches.ok()) {
        FUZZ_CHECK(!patches.error().message().empty());
        return 0;
    }
    FUZZ_CHECK(patches->grid_h % 2 == 0 && patches->grid_w % 2 == 0);
    FUZZ_CHECK(patches->values.size() == size_t(patches->rows()) * patches->values_per_patch);
    return 0;
}
