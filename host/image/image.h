/* SPDX-License-Identifier: Apache-2.0 */
// host/image/image.h: decoded images as the vision encoders' preprocessing takes them
// (8-bit RGB, rows top to bottom, no padding), and the limits every decoder applies to
// files that come from users.
//
// Decoding follows what Hugging Face processors see after PIL's `Image.open(f).convert("RGB")`:
// alpha is dropped (not composited), palettes are expanded, grey is replicated to R, G
// and B, no gamma or colour-profile conversion, no EXIF rotation. Where PIL differs from
// that rule it is noted next to the decoder (png_decode.cpp, jpeg_decode.cpp).
//
// Usage:
//   Image img = TDM_TRY(load_image("page.png"));   // or decode_image(bytes)
//   uint8_t red_of_first_pixel = img.rgb[0];
#pragma once

#include "common/error.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tdm {

struct Image {
    uint32_t width = 0;
    uint32_t height = 0;
    std::vector<uint8_t> rgb;  // width * height * 3 bytes, R G B per pixel

    const uint8_t* pixel(uint32_t x, uint32_t y) const { return rgb.data() + (size_t(y) * width + x) * 3; }
};

struct ImageLimits {
    // PIL's decompression-bomb error threshold (2 x Image.MAX_IMAGE_PIXELS), checked
    // from the header before any pixel memory is allocated.
    uint64_t max_pixels = 178'956'970;
    // The largest image file read into memory.
    uint64_t max_file_bytes = uint64_t(512) << 20;
    // Progressive JPEGs whose scan count grows without bound cost CPU time without
    // bound; real encoders write about ten.
    uint32_t max_jpeg_scans = 1000;
    // A PDF page renders in a child process (pdf_pages.h) that may take this much memory
    // beyond 8 bytes per pixel of the page, and this much CPU time: a content stream can
    // be built to exhaust either at any resolution (400,000 nested `q` operators in 2 KB
    // took 2.3 GB).
    uint64_t pdf_page_memory_bytes = uint64_t(1) << 30;
    uint32_t pdf_page_cpu_seconds = 60;
};

// The image in `bytes` (PNG or JPEG, told apart by their signatures). Errors name the
// format and what is wrong: "truncated PNG", "JPEG of 70000 x 70000 pixels is larger
// than the limit of ...", "not a PNG or JPEG image: it starts like a PDF document".
Result<Image> decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits = {});

// decode_image on the regular file at `path` (FIFOs and devices are refused, as every
// user file is); errors start with the path.
Result<Image> load_image(const std::string& path, const ImageLimits& limits = {});

// The decoders behind decode_image, for callers that know the format.
Result<Image> decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits);
Result<Image> decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits);

// "is larger than the limit": the shared size check of the decoders (before allocation).
Status check_image_size(const char* format, uint64_t width, uint64_t height, const ImageLimits& limits);

}  // namespace tdm
