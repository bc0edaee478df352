// SPDX-License-Identifier: MIT
// tandem/cpp/hparams.hpp: range-checked reads of a model source's metadata
// (GGUF keys or config.json paths) for an architecture's create callback.
//
// Model files are untrusted (tandem.h section 8, rule 7): every value is
// checked against a range before it sizes anything, and a failure leaves a
// message that names the file, the key, the value and the allowed range:
//
//     model.gguf: qwen3.block_count = 0 is outside [1, 4096]
//
// A hyper-parameter may have several spellings, tried in order, the first one
// present being read: the GGUF key and the HF config path of the same value
// ({"qwen3.block_count", "num_hidden_layers"}), or an old and a new name.
// Required reads fail when no spelling is present; `_or` reads take a default
// (checked against the same range).
//
//     HparamReader r(host, src, Err(err, err_size));
//     TDM_SDK_TRY(r.u32({"qwen3.block_count", "num_hidden_layers"}, 1, 4096, &hp.n_layer));
//     TDM_SDK_TRY(r.f32_or({"qwen3.rope.freq_base", "rope_theta"}, 1.0, 1e12, 10000.0f, &hp.rope_theta));
//
// Header-only, C++17; no exceptions. Statuses: TDM_ERR_BAD_MODEL for a missing
// or out-of-range value or one of the wrong type; TDM_ERR_INVALID_ARGUMENT
// for a key longer than kMaxKeyBytes (a plugin bug).
#ifndef TANDEM_CPP_HPARAMS_HPP
#define TANDEM_CPP_HPARAMS_HPP

#include <cinttypes>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "../tandem.h"
#include "status.hpp"

namespace tdm::sdk {

// The spellings of one hyper-parameter: a key, or a braced list of up to
// kMax keys tried in order (more is a plugin bug that every read reports).
class Keys {
public:
    static constexpr std::size_t kMax = 4;

    Keys(const char* key) noexcept : n_(1) { keys_[0] = key; }  // NOLINT: implicit on purpose
    Keys(std::initializer_list<const char*> keys) noexcept {
        if (keys.size() > kMax) {
            too_many_ = true;
            return;
        }
        for (const char* k : keys) keys_[n_++] = k;
    }

    const char* const* begin() const noexcept { return keys_; }
    const char* const* end() const noexcept { return keys_ + n_; }
    std::size_t size() const noexcept { return n_; }
    bool too_many() const noexcept { return too_many_; }

private:
    const char* keys_[kMax] = {};
    std::size_t n_ = 0;
    bool too_many_ = false;
};

class HparamReader {
public:
    static constexpr std::size_t kMaxKeyBytes = 256;    // prefix + key, with the NUL
    static constexpr std::size_t kMaxPrefixBytes = 64;  // with the NUL

    // `host` and `src` as the create callback received them; messages go to `err`.
    HparamReader(const tdm_host_api* host, const tdm_model_source* src, Err err) noexcept
        : host_(host), src_(src), err_(err), hf_(host->source_format(src) == TDM_SOURCE_SAFETENSORS) {}

    // The same reader with `prefix` prepended to every key ("qwen35.",
    // "text_config."). A prefix that does not fit kMaxPrefixBytes makes every
    // read fail with TDM_ERR_INVALID_ARGUMENT.
    HparamReader with_prefix(const char* prefix) const noexcept {
        HparamReader r = *this;
        const std::size_t n = prefix ? std::strlen(prefix) : 0;
        r.prefix_too_long_ = n >= kMaxPrefixBytes;
        if (!r.prefix_too_long_ && n) std::memcpy(r.prefix_, prefix, n + 1);
        if (r.prefix_too_long_ || !n) r.prefix_[0] = '\0';
        return r;
    }

    const tdm_host_api* host() const noexcept { return host_; }
    const tdm_model_source* source() const noexcept { return src_; }
    Err err() const noexcept { return err_; }
    const char* prefix() const noexcept { return prefix_; }
    // The source's path, for messages.
    const char* path() const noexcept {
        const char* p = host_->source_path ? host_->source_path(src_) : nullptr;
        return p && *p ? p : "model";
    }
    // True for an HF directory (keys are config.json paths), false for GGUF.
    bool hf() const noexcept { return hf_; }
    // The spelling of this source's layout: `gguf` for a GGUF file, `hf` for an
    // HF directory (r.u32(r.pick("qwen3.block_count", "num_hidden_layers"), ...)).
    const char* pick(const char* gguf, const char* hf) const noexcept { return hf_ ? hf : gguf; }

    // True when some spelling is present.
    bool has(Keys keys) const noexcept {
        char k[kMaxKeyBytes];
        return find(keys, k);
    }

    // ---- integers ----------------------------------------------------------
    tdm_status i64(Keys keys, std::int64_t lo, std::int64_t hi, std::int64_t* out) const noexcept {
        return read_int(keys, lo, hi, nullptr, out);
    }
    tdm_status i64_or(Keys keys, std::int64_t lo, std::int64_t hi, std::int64_t dflt,
                      std::int64_t* out) const noexcept {
        return read_int(keys, lo, hi, &dflt, out);
    }
    tdm_status u32(Keys keys, std::uint32_t lo, std::uint32_t hi, std::uint32_t* out) const noexcept {
        std::int64_t v = 0;
        TDM_SDK_TRY(read_int(keys, lo, hi, nullptr, &v));
        *out = std::uint32_t(v);
        return TDM_OK;
    }
    tdm_status u32_or(Keys keys, std::uint32_t lo, std::uint32_t hi, std::uint32_t dflt,
                      std::uint32_t* out) const noexcept {
        std::int64_t v = 0;
        const std::int64_t d = dflt;
        TDM_SDK_TRY(read_int(keys, lo, hi, &d, &v));
        *out = std::uint32_t(v);
        return TDM_OK;
    }

    // ---- floats (integers are accepted too) ---------------------------------
    // The range is checked on the double the host returns (NaN is never in
    // range), then the value is stored as float.
    tdm_status f32(Keys keys, double lo, double hi, float* out) const noexcept {
        return read_float(keys, lo, hi, nullptr, out);
    }
    tdm_status f32_or(Keys keys, double lo, double hi, float dflt, float* out) const noexcept {
        const double d = dflt;
        return read_float(keys, lo, hi, &d, out);
    }

    // ---- booleans -----------------------------------------------------------
    tdm_status boolean(Keys keys, bool* out) const noexcept { return read_bool(keys, nullptr, out); }
    tdm_status boolean_or(Keys keys, bool dflt, bool* out) const noexcept { return read_bool(keys, &dflt, out); }

    // ---- strings (valid while the source is open) ---------------------------
    tdm_status string(Keys keys, const char** out) const noexcept { return read_string(keys, nullptr, out); }
    tdm_status string_or(Keys keys, const char* dflt, const char** out) const noexcept {
        return read_string(keys, dflt ? dflt : "", out);
    }
    // A string that must be one of `allowed`: *index = its position there.
    //   "config.json: layer_types.3 = 'sliding' is not one of: full_attention, linear_attention"
    tdm_status choice(Keys keys, std::initializer_list<const char*> allowed, std::size_t* index) const noexcept {
        return read_choice(keys, allowed, nullptr, index);
    }
    tdm_status choice_or(Keys keys, std::initializer_list<const char*> allowed, std::size_t dflt,
                         std::size_t* index) const noexcept {
        return read_choice(keys, allowed, &dflt, index);
    }

    // ---- integer arrays -----------------------------------------------------
    // Exactly n elements, each in [lo, hi]. Required, or (_opt) optional:
    // *found = false and `out` untouched when no spelling is present.
    tdm_status u32_array(Keys keys, std::uint32_t lo, std::uint32_t hi, std::uint32_t* out, std::size_t n) const {
        bool found = false;
        TDM_SDK_TRY(read_u32_array(keys, lo, hi, out, n, &found));
        return found ? TDM_OK : missing(keys);
    }
    tdm_status u32_array_opt(Keys keys, std::uint32_t lo, std::uint32_t hi, std::uint32_t* out, std::size_t n,
                             bool* found) const {
        return read_u32_array(keys, lo, hi, out, n, found);
    }
    // Up to `cap` elements, each in [lo, hi], into out[0, *n); more than cap
    // is an error naming both counts. Required.
    tdm_status i64_array(Keys keys, std::int64_t lo, std::int64_t hi, std::int64_t* out, std::size_t cap,
                         std::size_t* n) const noexcept {
        *n = 0;
        char k[kMaxKeyBytes];
        TDM_SDK_TRY(check_keys(keys));
        if (!find(keys, k)) return missing(keys);
        std::uint64_t len = 0;
        if (host_->meta_get_int_array(src_, k, out, cap, &len) != TDM_OK) return host_failed(k);
        if (len > cap)
            return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s has %" PRIu64 " elements, at most %zu are allowed", path(), k,
                             len, cap);
        for (std::size_t i = 0; i < std::size_t(len); ++i)
            if (out[i] < lo || out[i] > hi)
                return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s[%zu] = %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]",
                                 path(), k, i, out[i], lo, hi);
        *n = std::size_t(len);
        return TDM_OK;
    }

    // ---- tensors (names in the file, not metadata keys: no prefix) -----------
    // True when some spelling names a tensor of the source.
    bool has_tensor(Keys names) const noexcept {
        tdm_tensor_info info;
        return tensor_info_opt(names, &info);
    }
    // The first present spelling's shape and type, or TDM_ERR_BAD_MODEL.
    tdm_status tensor_info(Keys names, tdm_tensor_info* out) const noexcept {
        if (tensor_info_opt(names, out)) return TDM_OK;
        char list[512];
        key_list(names, false, list, sizeof list);
        return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s %s is missing (required)", path(),
                         names.size() > 1 ? "none of the tensors" : "tensor", list);
    }

private:
    // Writes prefix + key into buf; false if it does not fit.
    bool full_key(const char* key, char* buf) const noexcept {
        const int n = std::snprintf(buf, kMaxKeyBytes, "%s%s", prefix_, key ? key : "");
        return n >= 0 && std::size_t(n) < kMaxKeyBytes;
    }
    tdm_status check_keys(Keys keys) const noexcept {
        char buf[kMaxKeyBytes];
        if (keys.too_many())
            return err_.fail(TDM_ERR_INVALID_ARGUMENT, "%s: a hyper-parameter has more than %zu spellings", path(),
                             Keys::kMax);
        if (keys.size() == 0)
            return err_.fail(TDM_ERR_INVALID_ARGUMENT, "%s: a hyper-parameter read without a key", path());
        if (prefix_too_long_)
            return err_.fail(TDM_ERR_INVALID_ARGUMENT, "%s: a metadata key prefix is longer than %zu bytes", path(),
                             kMaxPrefixBytes - 1);
        for (const char* k : keys)
            if (!full_key(k, buf))
                return err_.fail(TDM_ERR_INVALID_ARGUMENT, "%s: metadata key '%s%s' is longer than %zu bytes", path(),
                                 prefix_, k ? k : "", kMaxKeyBytes - 1);
        return TDM_OK;
    }
    // The first present spelling, written (with the prefix) into buf.
    bool find(Keys keys, char* buf) const noexcept {
        if (prefix_too_long_) return false;
        for (const char* k : keys)
            if (full_key(k, buf) && host_->meta_has(src_, buf)) return true;
        return false;
    }
    // "a" or "a, b, c" (with the prefix when `prefixed`), cut to fit.
    void key_list(Keys keys, bool prefixed, char* buf, std::size_t cap) const noexcept {
        std::size_t used = 0;
        buf[0] = '\0';
        for (const char* k : keys) {
            const int n = std::snprintf(buf + used, cap - used, "%s%s%s", used ? ", " : "", prefixed ? prefix_ : "",
                                        k ? k : "");
            if (n < 0 || std::size_t(n) >= cap - used) break;
            used += std::size_t(n);
        }
    }
    tdm_status missing(Keys keys) const noexcept {
        char list[512];
        key_list(keys, true, list, sizeof list);
        if (keys.size() > 1)
            return err_.fail(TDM_ERR_BAD_MODEL, "%s: none of the keys %s is set (one is required)", path(), list);
        return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s is missing (required)", path(), list);
    }
    tdm_status host_failed(const char* key) const noexcept {
        const char* why = host_->last_error ? host_->last_error() : nullptr;
        return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s: %s", path(), key, why && *why ? why : "cannot be read");
    }

    tdm_status read_int(Keys keys, std::int64_t lo, std::int64_t hi, const std::int64_t* dflt,
                        std::int64_t* out) const noexcept {
        char k[kMaxKeyBytes];
        TDM_SDK_TRY(check_keys(keys));
        if (!find(keys, k)) {
            if (!dflt) return missing(keys);
            if (*dflt < lo || *dflt > hi) {
                char list[512];
                key_list(keys, true, list, sizeof list);
                return err_.fail(TDM_ERR_BAD_MODEL,
                                 "%s: %s is absent and its default %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]",
                                 path(), list, *dflt, lo, hi);
            }
            *out = *dflt;
            return TDM_OK;
        }
        std::int64_t v = 0;
        if (host_->meta_get_int(src_, k, &v) != TDM_OK) return host_failed(k);
        if (v < lo || v > hi)
            return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s = %" PRId64 " is outside [%" PRId64 ", %" PRId64 "]", path(), k,
                             v, lo, hi);
        *out = v;
        return TDM_OK;
    }

    tdm_status read_float(Keys keys, double lo, double hi, const double* dflt, float* out) const noexcept {
        char k[kMaxKeyBytes];
        TDM_SDK_TRY(check_keys(keys));
        double v = 0;
        if (!find(keys, k)) {
            if (!dflt) return missing(keys);
            if (!(*dflt >= lo && *dflt <= hi)) {
                char list[512];
                key_list(keys, true, list, sizeof list);
                return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s is absent and its default %g is outside [%g, %g]", path(),
                                 list, *dflt, lo, hi);
            }
            *out = float(*dflt);
            return TDM_OK;
        }
        if (host_->meta_get_float(src_, k, &v) != TDM_OK) return host_failed(k);
        if (!(v >= lo && v <= hi))
            return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s = %g is outside [%g, %g]", path(), k, v, lo, hi);
        *out = float(v);
        return TDM_OK;
    }

    tdm_status read_bool(Keys keys, const bool* dflt, bool* out) const noexcept {
        char k[kMaxKeyBytes];
        TDM_SDK_TRY(check_keys(keys));
        if (!find(keys, k)) {
            if (!dflt) return missing(keys);
            *out = *dflt;
            return TDM_OK;
        }
        int v = 0;
        if (host_->meta_get_bool(src_, k, &v) != TDM_OK) return host_failed(k);
        *out = v != 0;
        return TDM_OK;
    }

    tdm_status read_string(Keys keys, const char* dflt, const char** out) const noexcept {
        char k[kMaxKeyBytes];
        TDM_SDK_TRY(check_keys(keys));
        if (!find(keys, k)) {
            if (!dflt) return missing(keys);
            *out = dflt;
            return TDM_OK;
        }
        const char* s = nullptr;
        if (host_->meta_get_string(src_, k, &s) != TDM_OK || !s) return host_failed(k);
        *out = s;
        return TDM_OK;
    }

    tdm_status read_choice(Keys keys, std::initializer_list<const char*> allowed, const std::size_t* dflt,
                           std::size_t* index) const noexcept {
        char k[kMaxKeyBytes];
        TDM_SDK_TRY(check_keys(keys));
        if (!find(keys, k)) {
            if (!dflt) return missing(keys);
            *index = *dflt;
            return TDM_OK;
        }
        const char* s = nullptr;
        if (host_->meta_get_string(src_, k, &s) != TDM_OK || !s) return host_failed(k);
        std::size_t i = 0;
        for (const char* a : allowed) {
            if (a && std::strcmp(a, s) == 0) {
                *index = i;
                return TDM_OK;
            }
            ++i;
        }
        char list[512];
        std::size_t used = 0;
        list[0] = '\0';
        for (const char* a : allowed) {
            const int n = std::snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", a ? a : "");
            if (n < 0 || std::size_t(n) >= sizeof list - used) break;
            used += std::size_t(n);
        }
        return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s = '%s' is not one of: %s", path(), k, s, list);
    }

    tdm_status read_u32_array(Keys keys, std::uint32_t lo, std::uint32_t hi, std::uint32_t* out, std::size_t n,
                              bool* found) const {
        *found = false;
        char k[kMaxKeyBytes];
        TDM_SDK_TRY(check_keys(keys));
        if (!find(keys, k)) return TDM_OK;
        std::vector<std::int64_t> v(n ? n : 1);
        std::uint64_t len = 0;
        if (host_->meta_get_int_array(src_, k, v.data(), n, &len) != TDM_OK) return host_failed(k);
        if (len != n)
            return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s has %" PRIu64 " elements, expected %zu", path(), k, len, n);
        for (std::size_t i = 0; i < n; ++i) {
            if (v[i] < std::int64_t(lo) || v[i] > std::int64_t(hi))
                return err_.fail(TDM_ERR_BAD_MODEL, "%s: %s[%zu] = %" PRId64 " is outside [%u, %u]", path(), k, i, v[i],
                                 unsigned(lo), unsigned(hi));
        }
        for (std::size_t i = 0; i < n; ++i) out[i] = std::uint32_t(v[i]);
        *found = true;
        return TDM_OK;
    }

    bool tensor_info_opt(Keys names, tdm_tensor_info* out) const noexcept {
        for (const char* name : names) {
            std::memset(out, 0, sizeof *out);
            out->struct_size = sizeof *out;
            if (name && host_->tensor_info(src_, name, out) == TDM_OK) return true;
        }
        std::memset(out, 0, sizeof *out);
        out->struct_size = sizeof *out;
        return false;
    }

    const tdm_host_api* host_;
    const tdm_model_source* src_;
    Err err_;
    bool hf_;
    char prefix_[kMaxPrefixBytes] = {};
    bool prefix_too_long_ = false;
};

}  // namespace tdm::sdk

#endif  // TANDEM_CPP_HPARAMS_HPP
