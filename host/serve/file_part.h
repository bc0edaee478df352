/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/file_part.h: OpenAI's file content parts of a chat request,
//   {"type": "file", "file": {"file_data": "data:application/pdf;base64,...", "filename": "a.pdf"}}
// read as a GLM-OCR server reads a document: a PDF's pages rendered (as `tandem ocr` renders
// them, at the same resolution) into images that stand at the part's place, in page order,
// each exactly as an image_url part of that page's rendering would. The image limits hold:
// every page counts as an image, the decoded file's bytes count as image bytes. Only PDFs
// given inline are read: the server has no Files API (`file_id` is refused).
// Not here: image_url parts and base64 (serve/image_url.h), rendering (image/pdf_pages.h).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/image_url.h"

namespace tdm::server {

// The pages of one file content part (`part`, at request path `at`) rendered at
// limits.pdf_dpi, within the limits and what `budget` has used (updated).
ApiResult<std::vector<Image>> read_file_part(const nlohmann::json& part, const std::string& at,
                                             const RequestLimits& limits, ImageBudget& budget);

}  // namespace tdm::server
