/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/image_url.h: the images of a chat request: OpenAI's image_url content parts,
//   {"type": "image_url", "image_url": {"url": "data:image/png;base64,...", "detail": "auto"}}
// read into decoded images within the request's limits (how many, how many bytes, and the
// image reader's pixel limits, checked from the header before any pixel memory). Only data:
// URLs with base64 PNG or JPEG are read: the server never fetches an address a request
// names (that would let any client make it reach whatever it can reach).
// Not here: what the images become for the model (serve/image_inputs.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "serve/openai_request.h"

namespace tdm::server {

// Base64 as RFC 4648 §4 writes it (the alphabet A-Z a-z 0-9 + /, padded with '=' to a
// multiple of four, no line breaks, unused bits zero), strictly: anything else is an error
// naming the offset and what is wrong there.
Result<std::vector<uint8_t>> decode_base64(std::string_view text);

// The image bytes of a data: URL ("data:image/png;base64,..." or image/jpeg). http(s) and
// other URLs, other media types and data that is not base64: errors saying why.
Result<std::vector<uint8_t>> image_url_bytes(std::string_view url);

// What a request's images have used of its limits so far.
struct ImageBudget {
    size_t images = 0;
    size_t bytes = 0;
};

// One image_url content part (`part`, at request path `at`) decoded, within the limits and
// what `budget` has used (updated).
ApiResult<Image> read_image_part(const nlohmann::json& part, const std::string& at, const RequestLimits& limits,
                                 ImageBudget& budget);

}  // namespace tdm::server
