// SPDX-License-Identifier: Apache-2.0
// host/formats/gguf_getters.cpp: typed metadata getters of GgufFile. Integer keys are
// accepted in any integer type and float keys as FLOAT32 or FLOAT64 (docs/formats/gguf.md
// A.3.5: the prose spec and gguf-py disagree on widths, so readers must take both),
// with range checks on every conversion.
// Not here: parsing (gguf.cpp); what a key means (plugins, tokenizer).
#include "formats/gguf.h"

#include <cstring>
#include <limits>

namespace tdm {
namespace {

constexpr std::string_view kExpectInt = "an integer (UINT8..INT64)";
constexpr std::string_view kExpectFloat = "FLOAT32 or FLOAT64";

bool is_integer(GgufType t) {
    switch (t) {
        case GgufType::UINT8: case GgufType::INT8: case GgufType::UINT16: case GgufType::INT16:
        case GgufType::UINT32: case GgufType::INT32: case GgufType::UINT64: case GgufType::INT64:
            return true;
        default:
            return false;
    }
}

bool is_signed(GgufType t) {
    return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 || t == GgufType::INT64;
}

bool is_float(GgufType t) { return t == GgufType::FLOAT32 || t == GgufType::FLOAT64; }

template <class T>
T load(const uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    return v;
}

// Callers check is_integer(t) first.
int64_t load_signed(const uint8_t* p, GgufType t) {
    switch (t) {
        case GgufType::INT8: return load<int8_t>(p);
        case GgufType::INT16: return load<int16_t>(p);
        case GgufType::INT32: return load<int32_t>(p);
        default: return load<int64_t>(p);
    }
}

uint64_t load_unsigned(const uint8_t* p, GgufType t) {
    switch (t) {
        case GgufType::UINT8: return load<uint8_t>(p);
        case GgufType::UINT16: return load<uint16_t>(p);
        case GgufType::UINT32: return load<uint32_t>(p);
        default: return load<uint64_t>(p);
    }
}

double load_float(const uint8_t* p, GgufType t) {
    return t == GgufType::FLOAT32 ? double(load<float>(p)) : load<double>(p);
}

std::string describe(const GgufValue& v) {
    if (v.type == GgufType::ARRAY)
        return fmt::format("ARRAY of {} ({} elements)", gguf_type_name(v.elem_type), v.count);
    return std::string(gguf_type_name(v.type));
}

}  // namespace

Error GgufFile::key_error(std::string_view key, std::string_view expected, const GgufValue* found) const {
    if (!found) return Error::format("{}: key '{}' not found (expected {})", path(), key, expected);
    return Error::format("{}: key '{}': expected {}, found {}", path(), key, expected, describe(*found));
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v || v->type != GgufType::STRING) return key_error(key, "STRING", v);
    return std::string(reinterpret_cast<const char*>(v->data), size_t(v->nbytes));
}

Result<uint64_t> GgufFile::get_uint(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v || !is_integer(v->type)) return key_error(key, kExpectInt, v);
    if (!is_signed(v->type)) return load_unsigned(v->data, v->type);
    int64_t s = load_signed(v->data, v->type);
    if (s < 0)
        return Error::format("{}: key '{}': value {} ({}) is negative, expected an unsigned integer",
                             path(), key, s, gguf_type_name(v->type));
    return uint64_t(s);
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v || !is_integer(v->type)) return key_error(key, kExpectInt, v);
    if (is_signed(v->type)) return load_signed(v->data, v->type);
    uint64_t u = load_unsigned(v->data, v->type);
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
        return Error::format("{}: key '{}': value {} ({}) does not fit in int64", path(), key, u,
                             gguf_type_name(v->type));
    return int64_t(u);
}

Result<double> GgufFile::get_float(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v || !is_float(v->type)) return key_error(key, kExpectFloat, v);
    return load_float(v->data, v->type);
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v || v->type != GgufType::BOOL) return key_error(key, "BOOL", v);
    return v->data[0] != 0;  // docs/formats/gguf.md A.3.2: any non-zero byte is true
}

Result<std::vector<std::string>> GgufFile::get_string_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v || v->type != GgufType::ARRAY || v->elem_type != GgufType::STRING)
        return key_error(key, "ARRAY of STRING", v);
    std::vector<std::string> out;
    out.reserve(size_t(v->count));
    for (std::string_view s : gguf_string_elements(*v)) out.emplace_back(s);
    return out;
}

Result<std::vector<int64_t>> GgufFile::get_int_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v || v->type != GgufType::ARRAY || !is_integer(v->elem_type))
        return key_error(key, "ARRAY of integers", v);
    const uint32_t step = gguf_scalar_size(v->elem_type);
    std::vector<int64_t> out(size_t(v->count));
    for (uint64_t i = 0; i < v->count; ++i) {
        const uint8_t* p = v->data + i * step;
        if (is_signed(v->elem_type)) {
            out[i] = load_signed(p, v->elem_type);
            continue;
        }
        uint64_t u = load_unsigned(p, v->elem_type);
        if (u > uint64_t(std::numeric_limits<int64_t>::max()))
            return Error::format("{}: key '{}': element {} = {} ({}) does not fit in int64", path(),
                                 key, i, u, gguf_type_name(v->elem_type));
        out[i] = int64_t(u);
    }
    return out;
}

Result<std::vector<double>> GgufFile::get_float_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v || v->type != GgufType::ARRAY || !is_float(v->elem_type))
        return key_error(key, "ARRAY of FLOAT32 or FLOAT64", v);
    const uint32_t step = gguf_scalar_size(v->elem_type);
    std::vector<double> out(size_t(v->count));
    for (uint64_t i = 0; i < v->count; ++i) out[i] = load_float(v->data + i * step, v->elem_type);
    return out;
}

Result<std::vector<bool>> GgufFile::get_bool_array(std::string_view key) const {
    const GgufValue* v = find(key);
    if (!v || v->type != GgufType::ARRAY || v->elem_type != GgufType::BOOL) return key_error(key, "ARRAY of BOOL", v);
    std::vector<bool> out(size_t(v->count));
    for (uint64_t i = 0; i < v->count; ++i) out[i] = v->data[i] != 0;  // the parser checked count bytes
    return out;
}

Result<std::string> GgufFile::get_string_or(std::string_view key, std::string dflt) const {
    if (!find(key)) return dflt;
    return get_string(key);
}

Result<uint64_t> GgufFile::get_uint_or(std::string_view key, uint64_t dflt) const {
    if (!find(key)) return dflt;
    return get_uint(key);
}

Result<int64_t> GgufFile::get_int_or(std::string_view key, int64_t dflt) const {
    if (!find(key)) return dflt;
    return get_int(key);
}

Result<double> GgufFile::get_float_or(std::string_view key, double dflt) const {
    if (!find(key)) return dflt;
    return get_float(key);
}

Result<bool> GgufFile::get_bool_or(std::string_view key, bool dflt) const {
    if (!find(key)) return dflt;
    return get_bool(key);
}

}  // namespace tdm
