// SPDX-License-Identifier: Apache-2.0
// host/image/jpeg_decode.cpp: JPEG to 8-bit RGB with libjpeg(-turbo), the library PIL
// decodes with, at the settings PIL uses (accurate integer DCT, fancy upsampling), so the
// pixels are PIL's.
//
// Grey replicates to RGB. CMYK and YCCK come out as CMYK, inverted (PIL reads every
// 4-channel JPEG as "CMYK;I", Adobe marker or not), then turned into RGB by PIL's
// formula. A file whose image data ends early is an error (libjpeg would pad it with grey;
// PIL refuses it unless told LOAD_TRUNCATED_IMAGES); one that ends after its last row, its
// end-of-image marker missing, decodes as in PIL. Other warnings (extraneous bytes, a bad
// marker after the image) are ignored, as PIL ignores them.
//
// libjpeg reports errors by longjmp: as in png_decode.cpp, all state changed after setjmp
// is on the heap and only C frames lie between setjmp and longjmp.
#include "image/image.h"

#include <jpeglib.h>
#include <jerror.h>

#include <csetjmp>
#include <cstdio>
#include <memory>
#include <new>

namespace tdm {

namespace {

struct JpegRead {
    jpeg_decompress_struct cinfo{};
    jpeg_error_mgr errors{};
    jpeg_progress_mgr progress{};
    std::jmp_buf jump{};
    uint32_t max_scans = 0;
    bool truncated = false;
    bool too_many_scans = false;
    char message[JMSG_LENGTH_MAX] = {};
    std::string refusal;  // a limit, not a libjpeg error: the whole message
    Image image;
    std::vector<uint8_t> cmyk_row;
};

JpegRead* state_of(j_common_ptr c) { return reinterpret_cast<JpegRead*>(c->client_data); }

[[noreturn]] void on_error(j_common_ptr c) {
    JpegRead* r = state_of(c);
    c->err->format_message(c, r->message);
    std::longjmp(r->jump, 1);
}

void on_message(j_common_ptr c, int level) {
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF) state_of(c)->truncated = true;
}

void on_progress(j_common_ptr c) {
    JpegRead* r = state_of(c);
    if (r->cinfo.input_scan_number > int(r->max_scans)) {
        r->too_many_scans = true;
        std::longjmp(r->jump, 1);
    }
}

// PIL's CMYK -> RGB (Convert.c cmyk2rgb): each channel is (255 - k) less that channel's
// share of it, with PIL's rounding division by 255.
uint8_t cmyk_channel(int ink, int k) {
    const int nk = 255 - k;
    const int t = ink * nk + 128;
    const int v = nk - (((t >> 8) + t) >> 8);
    return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

bool read_jpeg(JpegRead* r, std::span<const uint8_t> bytes, const ImageLimits& limits) {
    jpeg_decompress_struct& d = r->cinfo;
    d.err = jpeg_std_error(&r->errors);
    r->errors.error_exit = on_error;
    r->errors.emit_message = on_message;
    d.client_data = r;
    if (setjmp(r->jump)) {
        jpeg_destroy_decompress(&d);
        return false;
    }
    jpeg_create_decompress(&d);
    r->max_scans = limits.max_jpeg_scans;
    r->progress.progress_monitor = on_progress;
    d.progress = &r->progress;
    jpeg_mem_src(&d, bytes.data(), static_cast<unsigned long>(bytes.size()));
    jpeg_read_header(&d, TRUE);
    if (Status ok = check_image_size("JPEG", d.image_width, d.image_height, limits); !ok.ok())
        r->refusal = ok.error().message();
    if (!r->refusal.empty()) {
        jpeg_destroy_decompress(&d);
        return false;
    }
    const bool cmyk = d.jpeg_color_space == JCS_CMYK || d.jpeg_color_space == JCS_YCCK;
    d.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
    d.dct_method = JDCT_ISLOW;
    d.do_fancy_upsampling = TRUE;
    jpeg_start_decompress(&d);
    const uint32_t width = d.output_width, height = d.output_height;
    r->image.width = width;
    r->image.height = height;
    try {
        r->image.rgb.resize(size_t(width) * height * 3);
        if (cmyk) r->cmyk_row.resize(size_t(width) * 4);
    } catch (const std::bad_alloc&) {
        r->refusal = fmt::format("JPEG image of {} x {} pixels: out of memory", width, height);
        jpeg_destroy_decompress(&d);
        return false;
    }
    while (d.output_scanline < height) {
        uint8_t* out = r->image.rgb.data() + size_t(d.output_scanline) * width * 3;
        JSAMPROW row = cmyk ? r->cmyk_row.data() : out;
        if (jpeg_read_scanlines(&d, &row, 1) != 1) break;
        if (!cmyk) continue;
        for (uint32_t x = 0; x < width; ++x) {
            uint8_t ink[4];
            for (int c = 0; c < 4; ++c) {
                const uint8_t v = r->cmyk_row[size_t(x) * 4 + c];
                ink[c] = uint8_t(255 - v);
            }
            for (int c = 0; c < 3; ++c) out[size_t(x) * 3 + c] = cmyk_channel(ink[c], ink[3]);
        }
    }
    // No jpeg_finish_decompress: it reads on to the end-of-image marker, and a file
    // without one is still a whole image.
    const bool complete = d.output_scanline == height;
    jpeg_destroy_decompress(&d);
    if (!complete) r->truncated = true;
    return !r->truncated;
}

}  // namespace

Result<Image> decode_jpeg(std::span<const uint8_t> bytes, const ImageLimits& limits) {
    auto r = std::make_unique<JpegRead>();
    if (!read_jpeg(r.get(), bytes, limits)) {
        if (!r->refusal.empty()) return Error(r->refusal);
        if (r->too_many_scans)
            return Error::format("JPEG has more than {} progressive scans (a file made to cost decoding time)",
                                 limits.max_jpeg_scans);
        if (r->truncated) return Error::format("truncated JPEG: the file ends inside its image data ({} bytes)", bytes.size());
        return Error::format("corrupt JPEG: {}", r->message);
    }
    return std::move(r->image);
}

}  // namespace tdm
