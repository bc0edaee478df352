/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/api_error.h: an HTTP API error in OpenAI's shape, the one its clients parse:
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "max_tokens",
//              "code": null}}
// with the HTTP status it is sent with. Every refusal of the server is one of these, so
// that a client always gets JSON it can read, never an HTML page or an empty body.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace tdm::server {

struct ApiError {
    int status = 400;                            // HTTP status code
    std::string type = "invalid_request_error";  // OpenAI's error type
    std::string message;
    std::string param;  // the request field at fault, as a path ("messages[2].content"); "" = none
    std::string code;   // a machine-readable code ("model_not_found"); "" = none (JSON null)

    // 400 invalid_request_error naming `param`.
    static ApiError invalid(std::string param, std::string message);

    // The response body.
    std::string to_json() const;
};

// A value or the ApiError that explains why there is none.
template <class T>
class [[nodiscard]] ApiResult {
public:
    ApiResult(T value) : v_(std::move(value)) {}      // NOLINT: implicit by design
    ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT

    bool ok() const { return v_.index() == 0; }
    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }
    const ApiError& error() const { return std::get<1>(v_); }

private:
    std::variant<T, ApiError> v_;
};

}  // namespace tdm::server
