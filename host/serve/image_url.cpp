// SPDX-License-Identifier: Apache-2.0
// host/serve/image_url.cpp
#include "serve/image_url.h"

#include <fmt/format.h>

#include <array>
#include <cctype>

namespace tdm::server {

using json = nlohmann::json;

namespace {

// The value of each base64 character; -1: not one.
constexpr std::array<int8_t, 256> base64_values() {
    std::array<int8_t, 256> v{};
    for (size_t i = 0; i < 256; ++i) v[i] = -1;
    constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < alphabet.size(); ++i) v[uint8_t(alphabet[i])] = int8_t(i);
    return v;
}

std::string shown(char c) {
    const auto u = uint8_t(c);
    return std::isprint(u) ? fmt::format("'{}'", c) : fmt::format("byte 0x{:02x}", u);
}

bool starts_with_ci(std::string_view s, std::string_view prefix) {
    if (s.size() < prefix.size()) return false;
    for (size_t i = 0; i < prefix.size(); ++i)
        if (std::tolower(uint8_t(s[i])) != prefix[i]) return false;
    return true;
}

}  // namespace

Result<std::vector<uint8_t>> decode_base64(std::string_view text) {
    static constexpr std::array<int8_t, 256> values = base64_values();
    if (text.empty()) return Error("the base64 data is empty");
    if (text.size() % 4)
        return Error::format("base64 of {} characters: its length must be a multiple of 4 (padded with '=')",
                             text.size());
    size_t padding = 0;
    while (padding < 2 && text[text.size() - 1 - padding] == '=') ++padding;
    const size_t n = text.size() - padding;
    std::vector<uint8_t> out;
    out.reserve(text.size() / 4 * 3);
    uint32_t bits = 0;
    int held = 0;
    for (size_t i = 0; i < n; ++i) {
        const int8_t v = values[uint8_t(text[i])];
        if (v < 0)
            return Error::format("{} at offset {} is not a base64 character{}", shown(text[i]), i,
                                 text[i] == '=' ? " here (padding comes only at the end)" : "");
        bits = (bits << 6) | uint32_t(v);
        held += 6;
        if (held >= 8) {
            held -= 8;
            out.push_back(uint8_t(bits >> held));
            bits &= (1u << held) - 1;
        }
    }
    if (bits != 0) return Error("the base64 data's last character has bits set past its end (not canonical base64)");
    return out;
}

Result<std::vector<uint8_t>> image_url_bytes(std::string_view url) {
    if (starts_with_ci(url, "http://") || starts_with_ci(url, "https://"))
        return Error("this server does not fetch URLs; send the image as a data: URL "
                     "(data:image/png;base64,... or data:image/jpeg;base64,...)");
    if (!starts_with_ci(url, "data:"))
        return Error("only data: URLs are read (data:image/png;base64,... or data:image/jpeg;base64,...)");
    const size_t comma = url.find(',');
    if (comma == std::string_view::npos) return Error("the data: URL has no ',' before its data");
    const std::string_view header = url.substr(5, comma - 5);  // "image/png;base64"
    const std::string_view media = header.substr(0, header.find(';'));
    if (!starts_with_ci(media, "image/png") && !starts_with_ci(media, "image/jpeg") &&
        !starts_with_ci(media, "image/jpg"))
        return Error::format("the data: URL holds '{}'; only PNG and JPEG images (image/png, image/jpeg) are read",
                             media.empty() ? "text/plain" : std::string(media));
    if (!header.ends_with(";base64")) return Error("the data: URL is not base64 (data:image/png;base64,...)");
    auto bytes = decode_base64(url.substr(comma + 1));
    if (!bytes.ok()) return bytes.error().context("the data: URL's base64");
    return bytes;
}

ApiResult<Image> read_image_part(const json& part, const std::string& at, const RequestLimits& limits,
                                 ImageBudget& budget) {
    const std::string url_at = at + ".image_url.url";
    const auto it = part.find("image_url");
    if (it == part.end() || !it->is_object() || !it->contains("url") || !(*it)["url"].is_string())
        return ApiError::invalid(url_at, fmt::format("'{}' is missing: an image_url part is "
                                                     "{{\"type\": \"image_url\", \"image_url\": {{\"url\": "
                                                     "\"data:image/png;base64,...\"}}}}",
                                                     url_at));
    if (const auto detail = it->find("detail"); detail != it->end() && !detail->is_null()) {
        if (!detail->is_string() || (*detail != "auto" && *detail != "low" && *detail != "high"))
            return ApiError::invalid(at + ".image_url.detail",
                                     fmt::format("'{}.image_url.detail' must be auto, low or high", at));
    }
    if (++budget.images > limits.max_images)
        return ApiError::invalid(at, fmt::format("the request holds more than {} images, the most this server accepts "
                                                 "in one request",
                                                 limits.max_images));
    const std::string& url = (*it)["url"].get_ref<const std::string&>();
    auto bytes = image_url_bytes(url);
    if (!bytes.ok()) return ApiError::invalid(url_at, fmt::format("'{}': {}", url_at, bytes.error().message()));
    budget.bytes += bytes->size();
    if (budget.bytes > limits.max_image_bytes)
        return ApiError::invalid(url_at, fmt::format("the request's images hold more than {} bytes, the most this "
                                                     "server accepts in one request",
                                                     limits.max_image_bytes));
    auto image = decode_image(*bytes, limits.image);
    if (!image.ok()) return ApiError::invalid(url_at, fmt::format("'{}': {}", url_at, image.error().message()));
    return std::move(*image);
}

}  // namespace tdm::server
