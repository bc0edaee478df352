/* SPDX-License-Identifier: Apache-2.0 */
// host/common/error.h: errors as values for everything that reads untrusted input
// (files, config, plugins, requests) or can fail at run time (Vulkan, memory).
// Not here: programmer mistakes inside the runtime, which are asserts (TDM_ASSERT).
//
// Usage:
//   Result<int> parse(std::string_view s);
//   Result<void> load() {
//       int n = TDM_TRY(parse("12"));          // returns the error to our caller
//       if (n < 0) return Error::format("bad count {}", n);
//       return {};
//   }
#pragma once

#include <fmt/core.h>  // not format.h: nearly every source includes this header; core.h parses in 0.47 s, format.h in 0.79 s

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace tdm {

class Error {
public:
    Error() = default;
    explicit Error(std::string message) : message_(std::move(message)) {}

    template <class... Args>
    static Error format(fmt::format_string<Args...> f, Args&&... args) {
        return Error(fmt::format(f, std::forward<Args>(args)...));
    }
    // An error that carries a plugin-ABI status (tdm_status) for callers that
    // hand it across the ABI; 0 = unspecified.
    template <class... Args>
    static Error coded(int code, fmt::format_string<Args...> f, Args&&... args) {
        Error e(fmt::format(f, std::forward<Args>(args)...));
        e.code_ = code;
        return e;
    }

    const std::string& message() const { return message_; }
    int code() const { return code_; }

    // Prefix context: "loading model.gguf: " + original message (the code stays).
    Error context(std::string_view what) const {
        Error e(std::string(what) + ": " + message_);
        e.code_ = code_;
        return e;
    }

private:
    std::string message_;
    int code_ = 0;
};

template <class T>
class [[nodiscard]] Result {
public:
    Result(T value) : v_(std::move(value)) {}           // NOLINT: implicit by design
    Result(Error error) : v_(std::move(error)) {}       // NOLINT

    bool ok() const { return v_.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { return std::get<0>(v_); }
    const T& value() const& { return std::get<0>(v_); }
    T&& value() && { return std::get<0>(std::move(v_)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const Error& error() const { return std::get<1>(v_); }
    Error&& take_error() { return std::get<1>(std::move(v_)); }

private:
    std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
public:
    Result() = default;
    Result(Error error) : err_(std::move(error)), ok_(false) {}  // NOLINT

    bool ok() const { return ok_; }
    explicit operator bool() const { return ok_; }
    void value() const {}
    const Error& error() const { return err_; }
    Error&& take_error() { return std::move(err_); }

private:
    Error err_;
    bool ok_ = true;
};

using Status = Result<void>;

[[noreturn]] inline void assert_fail(const char* expr, const char* file, int line, const char* msg) {
    std::fprintf(stderr, "tandem: internal error: %s:%d: assertion '%s' failed%s%s\n", file, line,
                 expr, msg ? ": " : "", msg ? msg : "");
    std::abort();
}

}  // namespace tdm

// Evaluates a Result-returning expression; on error returns it from the enclosing
// function (which must return a Result/Status), otherwise yields the value.
// Uses a GNU statement expression (GCC and Clang); nests (unique names per use).
#define TDM_CONCAT_(a, b) a##b
#define TDM_CONCAT(a, b) TDM_CONCAT_(a, b)
#define TDM_TRY(expr) TDM_TRY_IMPL_(expr, TDM_CONCAT(tdm_try_result_, __COUNTER__))
#define TDM_TRY_IMPL_(expr, var)                       \
    ({                                                 \
        auto var = (expr);                             \
        if (!var.ok()) return var.take_error();        \
        std::move(var).value();                        \
    })

// Same, adding context to the error message on the way out.
#define TDM_TRY_CTX(expr, ctx) TDM_TRY_CTX_IMPL_(expr, ctx, TDM_CONCAT(tdm_try_result_, __COUNTER__))
#define TDM_TRY_CTX_IMPL_(expr, ctx, var)                     \
    ({                                                        \
        auto var = (expr);                                    \
        if (!var.ok()) return var.error().context(ctx);       \
        std::move(var).value();                               \
    })

// Internal invariants only (never for untrusted input).
#define TDM_ASSERT(cond) \
    ((cond) ? (void)0 : ::tdm::assert_fail(#cond, __FILE__, __LINE__, nullptr))
#define TDM_ASSERT_MSG(cond, msg) \
    ((cond) ? (void)0 : ::tdm::assert_fail(#cond, __FILE__, __LINE__, msg))
