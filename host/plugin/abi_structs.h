/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/abi_structs.h: reading the structs a plugin hands the host, and
// writing the ones it asks the host to fill, by the ABI's growth rules
// (tandem.h §1): copy min(struct_size, sizeof) into a zeroed struct, refuse a
// struct_size below the minimum of the plugin's negotiated ABI version, and
// step through arrays of structs by the elements' own struct_size.
// Not here: function tables (the host's table is static, host_api.cpp).
#pragma once

#include <tandem/ext/encoder.h>
#include <tandem/tandem.h>

#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"

namespace tdm {

// The smallest struct_size a plugin of ABI `abi` may pass for T: the size T had
// when that version was released. Unknown T: a compile error.
template <class T>
uint32_t abi_min_size(uint32_t abi);
template <> uint32_t abi_min_size<tdm_tensor_info>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_tensor_shape>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_op_desc>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_weight_request>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_batch_desc>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_attention_layer>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_recurrent_state>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_model_info>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_arch_desc>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_draft_head_info>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_draft_head_desc>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_drafter_desc>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_plugin_api>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_host_limits>(uint32_t abi);
// tdm.encoder version 1 (its structs carry the extension's version, not the ABI's)
template <> uint32_t abi_min_size<tdm_encoder_desc>(uint32_t abi);
template <> uint32_t abi_min_size<tdm_encoder_info>(uint32_t abi);

// A message a plugin wrote into a host buffer of `cap` bytes: read up to the
// first NUL or `cap` bytes, never past; `fallback` when empty.
std::string plugin_message(const char* buf, size_t cap, std::string_view fallback = {});

// Strings a plugin hands the host by pointer (names, descriptions, keys, list
// entries) carry no length: the host reads at most these many bytes of one.
inline constexpr size_t kPluginNameMax = 256;    // names, keys, spec types, tensor names
inline constexpr size_t kPluginTextMax = 16384;  // descriptions, log lines, hparam dumps
// The most entries read from a NULL-terminated list of names.
inline constexpr size_t kPluginListMax = 64;

// A string from a plugin, read up to its NUL or `max` bytes, never past: one
// that reaches `max` is cut there with "..." appended (it may have had no NUL).
// Null: `fallback`.
std::string plugin_string(const char* s, size_t max, std::string_view fallback = {});

// A name from a plugin: refused (an error naming `what`) when null, empty, or
// when no NUL comes within kPluginNameMax bytes; a name is never cut, since a
// cut name would silently match something else.
Result<std::string> plugin_name(const char* s, std::string_view what);

// A NULL-terminated list of names (gguf_names, spec_types, ...): at most
// kPluginListMax entries, each checked as plugin_name(); null list: empty.
Result<std::vector<std::string>> plugin_names(const char* const* list, std::string_view what);

// Copies *p into a zeroed T (min(p->struct_size, sizeof(T)) bytes); the copy's
// struct_size is sizeof(T). `what` names the struct in the error ("plugin x:
// architecture descriptor").
template <class T>
Result<T> read_abi_struct(const T* p, uint32_t abi, std::string_view what) {
    if (!p) return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: null pointer", what);
    uint32_t size = 0;
    std::memcpy(&size, p, sizeof size);
    const uint32_t min = abi_min_size<T>(abi);
    if (size < min)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "{}: struct_size is {} bytes, ABI {} needs at least {} (was struct_size set?)", what, size,
                            abi, min);
    T out{};
    std::memcpy(&out, p, size < sizeof(T) ? size : sizeof(T));
    out.struct_size = uint32_t(sizeof(T));
    return out;
}

// An array of n structs written by a plugin. ABI 2 on: the stride is the first
// element's struct_size, which every element must repeat. ABI 1 plugins: the
// stride is the v1 size and elements' struct_size is not looked at, as the ABI 1
// host read them (plugins that left it zero worked then and still do).
template <class T>
Result<std::vector<T>> read_abi_array(const T* p, uint64_t n, uint32_t abi, std::string_view what) {
    std::vector<T> out;
    if (n == 0) return out;
    if (!p) return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: {} elements declared but no array", what, n);
    if (n > (1u << 20)) return Error::coded(TDM_ERR_LIMIT, "{}: {} elements is implausible", what, n);
    if (abi < 2) {
        const uint32_t v1 = abi_min_size<T>(1);
        const auto* bytes = reinterpret_cast<const unsigned char*>(p);
        out.resize(size_t(n));
        for (uint64_t i = 0; i < n; ++i) {
            std::memcpy(&out[size_t(i)], bytes + i * v1, v1);
            out[size_t(i)].struct_size = uint32_t(sizeof(T));
        }
        return out;
    }
    uint32_t stride = 0;
    std::memcpy(&stride, p, sizeof stride);
    if (stride > 4096)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "{}: element struct_size {} is implausible", what, stride);
    const auto* bytes = reinterpret_cast<const unsigned char*>(p);
    out.reserve(size_t(n));
    for (uint64_t i = 0; i < n; ++i) {
        const auto* e = reinterpret_cast<const T*>(bytes + i * stride);
        uint32_t size = 0;
        std::memcpy(&size, e, sizeof size);
        if (size != stride)
            return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                                "{}: element {} has struct_size {}, element 0 has {} (all must match)", what, i, size,
                                stride);
        out.push_back(TDM_TRY(read_abi_struct(e, abi, fmt::format("{} element {}", what, i))));
    }
    return out;
}

// Fills a struct the plugin passed for the host to write: only the first
// min(dst->struct_size, sizeof(T)) bytes, keeping dst->struct_size.
template <class T>
tdm_status write_abi_struct(T* dst, const T& value, std::string_view what, std::string* err) {
    if (!dst) {
        *err = fmt::format("{}: null pointer", what);
        return TDM_ERR_INVALID_ARGUMENT;
    }
    const uint32_t size = dst->struct_size;
    const uint32_t min = abi_min_size<T>(1);
    if (size < min) {
        *err = fmt::format("{}: struct_size is {} bytes, at least {} needed (was struct_size set?)", what, size, min);
        return TDM_ERR_INVALID_ARGUMENT;
    }
    std::memcpy(dst, &value, size < sizeof(T) ? size : sizeof(T));
    dst->struct_size = size;
    return TDM_OK;
}

}  // namespace tdm
