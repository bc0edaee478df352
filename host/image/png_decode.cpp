// SPDX-License-Identifier: Apache-2.0
// host/image/png_decode.cpp: PNG to 8-bit RGB with libpng.
//
// As PIL's convert("RGB") has it: palettes expand, grey is replicated, alpha (an alpha
// channel or a tRNS chunk) is dropped, gAMA/iCCP/sRGB are ignored. Sixteen-bit samples
// keep their high byte, as PIL does for colour images; PIL clips 16-bit grey to 255
// instead (its I;16 -> RGB conversion), which whitens such images, so there we differ.
//
// libpng reports errors by longjmp. Everything that changes after setjmp lives in a heap
// object reached through a pointer set before it, and only C frames (libpng's and the
// callbacks below) lie between setjmp and longjmp.
#include "image/image.h"

#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

namespace tdm {

namespace {

struct PngRead {
    std::span<const uint8_t> bytes;
    size_t at = 0;
    bool truncated = false;
    char message[256] = {};
    std::string refusal;  // a limit, not a libpng error: the whole message
    Image image;
    std::vector<png_bytep> rows;
};

void read_bytes(png_structp png, png_bytep out, size_t n) {
    auto* r = static_cast<PngRead*>(png_get_io_ptr(png));
    if (n > r->bytes.size() - r->at) {
        r->truncated = true;
        png_error(png, "unexpected end of file");
    }
    std::memcpy(out, r->bytes.data() + r->at, n);
    r->at += n;
}

void on_error(png_structp png, png_const_charp message) {
    auto* r = static_cast<PngRead*>(png_get_error_ptr(png));
    std::snprintf(r->message, sizeof r->message, "%s", message ? message : "unknown error");
    png_longjmp(png, 1);
}

// Warnings concern ancillary data (bad profiles, CRC errors in optional chunks), which
// libpng skips and PIL ignores.
void on_warning(png_structp, png_const_charp) {}

// Reads r->bytes into r->image; false (with r->message) on any libpng error.
bool read_png(PngRead* r, const ImageLimits& limits) {
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, on_error, on_warning);
    if (!png) {
        std::snprintf(r->message, sizeof r->message, "out of memory");
        return false;
    }
    png_infop info = png_create_info_struct(png);
    if (!info) {
        std::snprintf(r->message, sizeof r->message, "out of memory");
        png_destroy_read_struct(&png, nullptr, nullptr);
        return false;
    }
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, nullptr);
        return false;
    }
    png_set_read_fn(png, r, read_bytes);
    // Ancillary chunks (text, profiles) are not needed: cap what one may allocate.
    png_set_chunk_malloc_max(png, 8u << 20);
    png_set_user_limits(png, 0x7fffffff, 0x7fffffff);  // the pixel limit below decides
    // A critical chunk (IHDR, PLTE, IDAT) whose checksum is wrong is a damaged file: refused.
    // PIL refuses those before the image data too (it does not check IDAT's). Ancillary
    // chunks carry nothing we use: theirs are not checked.
    png_set_crc_action(png, PNG_CRC_ERROR_QUIT, PNG_CRC_QUIET_USE);
    png_read_info(png, info);

    png_uint_32 width = 0, height = 0;
    int depth = 0, colour = 0, interlace = 0;
    png_get_IHDR(png, info, &width, &height, &depth, &colour, &interlace, nullptr, nullptr);
    if (Status ok = check_image_size("PNG", width, height, limits); !ok.ok()) r->refusal = ok.error().message();
    if (!r->refusal.empty()) {
        png_destroy_read_struct(&png, &info, nullptr);
        return false;
    }
    if (colour == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (colour == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (depth == 16) png_set_strip_16(png);
    // Expanding a palette also turns a tRNS chunk into an alpha channel: drop it too.
    if ((colour & PNG_COLOR_MASK_ALPHA) || png_get_valid(png, info, PNG_INFO_tRNS)) png_set_strip_alpha(png);
    if (colour == PNG_COLOR_TYPE_GRAY || colour == PNG_COLOR_TYPE_GRAY_ALPHA) png_set_gray_to_rgb(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != size_t(width) * 3) {
        std::snprintf(r->message, sizeof r->message, "unsupported pixel layout (colour type %d, %d bits)", colour,
                      depth);
        png_destroy_read_struct(&png, &info, nullptr);
        return false;
    }
    r->image.width = width;
    r->image.height = height;
    try {
        r->image.rgb.resize(size_t(width) * height * 3);
        r->rows.resize(height);
    } catch (const std::bad_alloc&) {
        r->refusal = fmt::format("PNG image of {} x {} pixels: out of memory", width, height);
        png_destroy_read_struct(&png, &info, nullptr);
        return false;
    }
    for (png_uint_32 y = 0; y < height; ++y) r->rows[y] = r->image.rgb.data() + size_t(y) * width * 3;
    png_read_image(png, r->rows.data());
    // No png_read_end: the chunks after the image data carry nothing we use, and PIL
    // takes an image whose IEND is missing.
    png_destroy_read_struct(&png, &info, nullptr);
    return true;
}

}  // namespace

Result<Image> decode_png(std::span<const uint8_t> bytes, const ImageLimits& limits) {
    auto r = std::make_unique<PngRead>();
    r->bytes = bytes;
    if (!read_png(r.get(), limits)) {
        if (r->truncated) return Error::format("truncated PNG: the file ends inside its image data ({} bytes)", bytes.size());
        if (!r->refusal.empty()) return Error(r->refusal);
        if (std::strstr(r->message, "CRC error"))
            return Error::format("corrupt PNG: {} (the chunk's checksum does not match its bytes)", r->message);
        return Error::format("corrupt PNG: {}", r->message);
    }
    return std::move(r->image);
}

}  // namespace tdm
