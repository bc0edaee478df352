// SPDX-License-Identifier: Apache-2.0
// host/serve/file_part.cpp
#include "serve/file_part.h"

#include <fmt/format.h>

#include <cctype>
#include <string_view>

#include "image/pdf_pages.h"

namespace tdm::server {

using json = nlohmann::json;

namespace {

constexpr const char* kFilePartShape =
    "a file part is {\"type\": \"file\", \"file\": {\"file_data\": \"data:application/pdf;base64,...\", "
    "\"filename\": \"a.pdf\"}}";

bool has_prefix_ignoring_case(std::string_view s, std::string_view lower_prefix) {
    if (s.size() < lower_prefix.size()) return false;
    for (size_t i = 0; i < lower_prefix.size(); ++i)
        if (std::tolower(uint8_t(s[i])) != lower_prefix[i]) return false;
    return true;
}

bool is_pdf_media_type(std::string_view media) {
    return media.size() == 15 && has_prefix_ignoring_case(media, "application/pdf");
}

}  // namespace

ApiResult<std::vector<Image>> read_file_part(const json& part, const std::string& at, const RequestLimits& limits,
                                             ImageBudget& budget) {
    const std::string file_at = at + ".file";
    const auto file = part.find("file");
    if (file == part.end() || !file->is_object())
        return ApiError::invalid(file_at, fmt::format("'{}' is missing: {}", file_at, kFilePartShape));
    if (const auto id = file->find("file_id"); id != file->end() && !id->is_null())
        return ApiError::invalid(file_at + ".file_id",
                                 fmt::format("'{}.file_id': this server has no Files API; send the file itself as "
                                             "file_data (data:application/pdf;base64,...)",
                                             file_at));
    std::string name = "the PDF";
    if (const auto filename = file->find("filename"); filename != file->end() && !filename->is_null()) {
        if (!filename->is_string())
            return ApiError::invalid(file_at + ".filename", fmt::format("'{}.filename' must be a string", file_at));
        if (!filename->get_ref<const std::string&>().empty())
            name = fmt::format("'{}'", filename->get_ref<const std::string&>());
    }
    const std::string data_at = file_at + ".file_data";
    const auto data = file->find("file_data");
    if (data == file->end() || !data->is_string())
        return ApiError::invalid(data_at, fmt::format("'{}' is missing: {}", data_at, kFilePartShape));
    const std::string_view url = data->get_ref<const std::string&>();
    if (!has_prefix_ignoring_case(url, "data:"))
        return ApiError::invalid(data_at, fmt::format("'{}' must be a data: URL (data:application/pdf;base64,...)",
                                                      data_at));
    const size_t comma = url.find(',');
    if (comma == std::string_view::npos)
        return ApiError::invalid(data_at, fmt::format("'{}': the data: URL has no ',' before its data", data_at));
    const std::string_view header = url.substr(5, comma - 5);  // "application/pdf;base64"
    const std::string_view media = header.substr(0, header.find(';'));
    if (!is_pdf_media_type(media))
        return ApiError::invalid(at, fmt::format("'{}' holds a file of type '{}'; only PDF files (application/pdf) "
                                                 "are read",
                                                 at, media.empty() ? "text/plain" : std::string(media)));
    if (!header.ends_with(";base64"))
        return ApiError::invalid(data_at, fmt::format("'{}' is not base64 (data:application/pdf;base64,...)", data_at));
    auto bytes = decode_base64(url.substr(comma + 1));
    if (!bytes.ok())
        return ApiError::invalid(data_at, fmt::format("'{}': the data: URL's base64: {}", data_at,
                                                      bytes.error().message()));
    budget.bytes += bytes->size();
    if (budget.bytes > limits.max_image_bytes)
        return ApiError::invalid(data_at, fmt::format("the request's images and files hold more than {} bytes, the "
                                                      "most this server accepts in one request",
                                                      limits.max_image_bytes));
    auto doc = PdfDocument::open_bytes(std::string(bytes->begin(), bytes->end()), name, limits.image);
    if (!doc.ok()) return ApiError::invalid(at, fmt::format("'{}': {}", at, doc.error().message()));
    const size_t pages = size_t(doc->pages());
    budget.images += pages;
    if (budget.images > limits.max_images)
        return ApiError::invalid(at, fmt::format("'{}': {} has {} pages, each an image; the request holds more than {} "
                                                 "images, the most this server accepts in one request",
                                                 at, name, pages, limits.max_images));
    std::vector<Image> images;
    images.reserve(pages);
    for (size_t i = 0; i < pages; ++i) {
        auto page = doc->render(int(i), limits.pdf_dpi);
        if (!page.ok()) return ApiError::invalid(at, fmt::format("'{}': {}", at, page.error().message()));
        images.push_back(std::move(*page));
    }
    return images;
}

}  // namespace tdm::server
