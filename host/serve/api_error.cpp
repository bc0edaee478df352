// SPDX-License-Identifier: Apache-2.0
// host/serve/api_error.cpp
#include "serve/api_error.h"

#include <nlohmann/json.hpp>

namespace tdm::server {

ApiError ApiError::invalid(std::string param, std::string message) {
    ApiError e;
    e.param = std::move(param);
    e.message = std::move(message);
    return e;
}

std::string ApiError::to_json() const {
    nlohmann::json error = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
    if (!param.empty()) error["param"] = param;
    if (!code.empty()) error["code"] = code;
    // A message may quote a client's bytes that are not UTF-8: replace them rather than throw.
    return nlohmann::json{{"error", error}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tdm::server
