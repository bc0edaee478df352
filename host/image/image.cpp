// SPDX-License-Identifier: Apache-2.0
// host/image/image.cpp: format detection and file loading for decoded images.
#include "image/image.h"

#include "common/file_read.h"

#include <cstring>

namespace tdm {

namespace {

bool starts_with(std::span<const uint8_t> b, std::string_view magic) {
    return b.size() >= magic.size() && std::memcmp(b.data(), magic.data(), magic.size()) == 0;
}

// What a file that is not PNG or JPEG looks like, for the message.
std::string other_format_name(std::span<const uint8_t> b) {
    if (starts_with(b, "%PDF-")) return "a PDF document";
    if (starts_with(b, "GIF87a") || starts_with(b, "GIF89a")) return "a GIF image";
    if (starts_with(b, "RIFF") && b.size() >= 12 && std::memcmp(b.data() + 8, "WEBP", 4) == 0) return "a WebP image";
    if (starts_with(b, "BM")) return "a BMP image";
    if (starts_with(b, "II*") || starts_with(b, "MM\0*")) return "a TIFF image";
    return "";
}

}  // namespace

Status check_image_size(const char* format, uint64_t width, uint64_t height, const ImageLimits& limits) {
    if (width == 0 || height == 0) return Error::format("{} image of {} x {} pixels is empty", format, width, height);
    if (width * height > limits.max_pixels)
        return Error::format("{} image of {} x {} pixels is larger than the limit of {} pixels "
                             "(a decompression bomb, or a page to scale down first)",
                             format, width, height, limits.max_pixels);
    return {};
}

Result<Image> decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits) {
    if (bytes.empty()) return Error("the image is empty (0 bytes)");
    if (starts_with(bytes, "\x89PNG\r\n\x1a\n")) return decode_png(bytes, limits);
    if (bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF) return decode_jpeg(bytes, limits);
    const std::string other = other_format_name(bytes);
    if (!other.empty()) return Error::format("not a PNG or JPEG image: it is {}", other);
    return Error("not a PNG or JPEG image (no PNG or JPEG signature at its start)");
}

Result<Image> load_image(const std::string& path, const ImageLimits& limits) {
    const std::string bytes = TDM_TRY(read_regular_file(path, limits.max_file_bytes, "image file"));
    auto image = decode_image({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, limits);
    if (!image.ok()) return image.error().context(path);
    return image;
}

}  // namespace tdm
