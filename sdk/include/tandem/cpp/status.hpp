// SPDX-License-Identifier: MIT
// tandem/cpp/status.hpp: error propagation for C++ plugins: the err buffer of
// a callback (Err), fail() to write a message into it, a status that owns its
// message (Status), SDK_TRY to pass failures up, and guard() to keep C++
// exceptions on the plugin's side of the ABI (tandem.h section 8, rule 4).
//
// Header-only, C++17; part of the SDK, not of the binary ABI (it compiles into
// the plugin). Nothing here throws or allocates, so it suits code built with
// -fno-exceptions too (guard() then only calls the function).
#ifndef TANDEM_CPP_STATUS_HPP
#define TANDEM_CPP_STATUS_HPP

#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>

#include "../tandem.h"

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
#include <exception>
#include <new>
#define TDM_SDK_EXCEPTIONS 1
#else
#define TDM_SDK_EXCEPTIONS 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TDM_SDK_PRINTF(fmt_index, first_arg) __attribute__((format(printf, fmt_index, first_arg)))
#else
#define TDM_SDK_PRINTF(fmt_index, first_arg)
#endif

// Evaluates `expr` (a tdm_status) once and returns it from the enclosing
// function unless it is TDM_OK. The message is already in the err buffer.
#define TDM_SDK_TRY(expr)                            \
    do {                                             \
        const tdm_status tdm_sdk_try_st_ = (expr);   \
        if (tdm_sdk_try_st_ != TDM_OK) return tdm_sdk_try_st_; \
    } while (0)

namespace tdm::sdk {

// Writes a printf-style message into buf[0, size) and returns nothing. The
// result is always NUL-terminated (when size > 0); a message that does not fit
// ends in "..." so that a reader can tell it was cut.
inline void vformat_message(char* buf, std::size_t size, const char* fmt, std::va_list ap) noexcept {
    if (!buf || size == 0) return;
    const int n = std::vsnprintf(buf, size, fmt ? fmt : "", ap);
    if (n < 0) {
        buf[0] = '\0';
        return;
    }
    if (std::size_t(n) >= size && size >= 4) std::memcpy(buf + size - 4, "...", 4);
}

// The err buffer of a callback: err_size bytes including the NUL (tandem.h
// section 2). A default Err (null buffer) drops messages; statuses still flow.
class Err {
public:
    constexpr Err() noexcept = default;
    constexpr Err(char* buf, std::size_t size) noexcept : buf_(size ? buf : nullptr), size_(buf ? size : 0) {}

    // Writes the message and returns `st`, so that `return err.fail(...)` reads naturally.
    tdm_status fail(tdm_status st, const char* fmt, ...) const noexcept TDM_SDK_PRINTF(3, 4) {
        std::va_list ap;
        va_start(ap, fmt);
        vformat_message(buf_, size_, fmt, ap);
        va_end(ap);
        return st;
    }
    // Clears the message (a buffer a callee may or may not have written).
    void clear() const noexcept {
        if (buf_) buf_[0] = '\0';
    }
    const char* message() const noexcept { return buf_ ? buf_ : ""; }
    char* data() const noexcept { return buf_; }
    std::size_t size() const noexcept { return size_; }

private:
    char* buf_ = nullptr;
    std::size_t size_ = 0;
};

// fail(err, err_size, status, fmt, ...): the same for a raw (err, err_size) pair.
inline tdm_status fail(char* err, std::size_t err_size, tdm_status st, const char* fmt, ...) noexcept
    TDM_SDK_PRINTF(4, 5);
inline tdm_status fail(char* err, std::size_t err_size, tdm_status st, const char* fmt, ...) noexcept {
    if (err && err_size) {
        std::va_list ap;
        va_start(ap, fmt);
        vformat_message(err, err_size, fmt, ap);
        va_end(ap);
    }
    return st;
}

// A status with the message it owns, for code that has no callback's err
// buffer at hand: a v1 callback calling v2-style code, or a result kept for
// later. Pass err() to a callee and record its result with capture():
//
//     Status s;
//     if (!s.capture(d->begin(prompt, n, s.err()))) log(s.message());
class Status {
public:
    static constexpr std::size_t kMessageBytes = 512;

    Status() noexcept = default;
    static Status error(tdm_status st, const char* fmt, ...) noexcept TDM_SDK_PRINTF(2, 3) {
        Status s;
        s.code_ = st;
        std::va_list ap;
        va_start(ap, fmt);
        vformat_message(s.message_, sizeof s.message_, fmt, ap);
        va_end(ap);
        return s;
    }

    bool ok() const noexcept { return code_ == TDM_OK; }
    tdm_status code() const noexcept { return code_; }
    const char* message() const noexcept { return message_; }

    // The buffer a callee writes its message into.
    Err err() noexcept { return Err(message_, sizeof message_); }
    // Records a callee's status (its message is already in err()); returns ok().
    bool capture(tdm_status st) noexcept {
        code_ = st;
        if (st == TDM_OK) message_[0] = '\0';
        return st == TDM_OK;
    }
    // Hands the status to the host: copies the message into `err` and returns the code.
    tdm_status report(Err err) const noexcept {
        // report(s.err()) targets our own buffer: nothing to copy (and snprintf
        // from a buffer into itself would be undefined).
        if (code_ != TDM_OK && err.data() != message_) err.fail(code_, "%s", message_);
        return code_;
    }

private:
    tdm_status code_ = TDM_OK;
    char message_[kMessageBytes] = {};
};

// Runs fn() (returning tdm_status, or void for TDM_OK) and turns a C++
// exception that escapes it into a status and a message naming `what` (the
// callback: "ngram_cache: propose"): std::bad_alloc -> TDM_ERR_OUT_OF_MEMORY,
// anything else -> TDM_ERR_INTERNAL with what() when it is a std::exception.
// Wrap the body of every callback whose code may throw (contract rule 4).
template <class F>
tdm_status guard(Err err, const char* what, F&& fn) noexcept {
    using R = decltype(std::forward<F>(fn)());
    static_assert(std::is_void<R>::value || std::is_same<R, tdm_status>::value,
                  "guard(): the function must return tdm_status or void");
    if (!what) what = "callback";
#if !TDM_SDK_EXCEPTIONS
    (void)err;
#endif
#if TDM_SDK_EXCEPTIONS
    try {
#endif
        if constexpr (std::is_void<R>::value) {
            std::forward<F>(fn)();
            return TDM_OK;
        } else {
            return std::forward<F>(fn)();
        }
#if TDM_SDK_EXCEPTIONS
    } catch (const std::bad_alloc&) {
        return err.fail(TDM_ERR_OUT_OF_MEMORY, "%s: out of memory", what);
    } catch (const std::exception& e) {
        return err.fail(TDM_ERR_INTERNAL, "%s: internal error: %s", what, e.what());
    } catch (...) {
        return err.fail(TDM_ERR_INTERNAL, "%s: internal error: unknown C++ exception", what);
    }
#endif
}

// A short name for each status code, for messages.
constexpr const char* status_name(tdm_status st) noexcept {
    switch (st) {
    case TDM_OK: return "ok";
    case TDM_ERR_INVALID_ARGUMENT: return "invalid argument";
    case TDM_ERR_ABI_MISMATCH: return "ABI mismatch";
    case TDM_ERR_NOT_FOUND: return "not found";
    case TDM_ERR_SHAPE: return "shape mismatch";
    case TDM_ERR_UNSUPPORTED: return "unsupported";
    case TDM_ERR_OUT_OF_MEMORY: return "out of memory";
    case TDM_ERR_BAD_MODEL: return "bad model";
    case TDM_ERR_INTERNAL: return "internal error";
    case TDM_ERR_TYPE: return "wrong type";
    case TDM_ERR_LIMIT: return "over a host limit";
    default: return "unknown status";
    }
}

}  // namespace tdm::sdk

#endif  // TANDEM_CPP_STATUS_HPP
