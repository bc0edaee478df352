// plugins/qwen-nextn/meta.cpp
#include "meta.h"

#include <cstdarg>
#include <cstdio>
#include <vector>

namespace qwen {

tdm_status fail(char* err, size_t err_size, tdm_status st, const char* fmt, ...) {
    if (err && err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_size, fmt, ap);
        va_end(ap);
    }
    return st;
}

bool MetaReader::has(const char* key) const { return host->meta_has(src, (prefix + key).c_str()) != 0; }

tdm_status MetaReader::u32(const char* key, uint32_t lo, uint32_t hi, uint32_t* out) const {
    const std::string k = prefix + key;
    int64_t v = 0;
    if (host->meta_get_int(src, k.c_str(), &v) != TDM_OK)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s", host->last_error());
    if (v < int64_t(lo) || v > int64_t(hi))
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: %s = %lld is outside [%u, %u]", host->source_path(src),
                    k.c_str(), (long long)v, lo, hi);
    *out = uint32_t(v);
    return TDM_OK;
}

tdm_status MetaReader::u32_or(const char* key, uint32_t lo, uint32_t hi, uint32_t dflt, uint32_t* out) const {
    if (!has(key)) {
        *out = dflt;
        return TDM_OK;
    }
    return u32(key, lo, hi, out);
}

tdm_status MetaReader::f32_or(const char* key, float dflt, float* out) const {
    if (!has(key)) {
        *out = dflt;
        return TDM_OK;
    }
    double v = 0;
    if (host->meta_get_float(src, (prefix + key).c_str(), &v) != TDM_OK)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s", host->last_error());
    *out = float(v);
    return TDM_OK;
}

tdm_status MetaReader::bool_or(const char* key, bool dflt, bool* out) const {
    if (!has(key)) {
        *out = dflt;
        return TDM_OK;
    }
    int v = 0;
    if (host->meta_get_bool(src, (prefix + key).c_str(), &v) != TDM_OK)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s", host->last_error());
    *out = v != 0;
    return TDM_OK;
}

tdm_status MetaReader::u32_array(const char* key, uint32_t n, uint32_t lo, uint32_t hi, uint32_t* out,
                                 bool* found) const {
    *found = false;
    if (!has(key)) return TDM_OK;
    const std::string k = prefix + key;
    std::vector<int64_t> v(n);
    uint64_t len = 0;
    if (host->meta_get_int_array(src, k.c_str(), v.data(), n, &len) != TDM_OK)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s", host->last_error());
    if (len != n)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: %s has %llu elements, expected %u", host->source_path(src),
                    k.c_str(), (unsigned long long)len, n);
    for (uint32_t i = 0; i < n; ++i) {
        if (v[i] < int64_t(lo) || v[i] > int64_t(hi))
            return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s: %s[%u] = %lld is outside [%u, %u]",
                        host->source_path(src), k.c_str(), i, (long long)v[i], lo, hi);
        out[i] = uint32_t(v[i]);
    }
    *found = true;
    return TDM_OK;
}

tdm_status MetaReader::string_or(const char* key, const char* dflt, std::string* out) const {
    if (!has(key)) {
        *out = dflt;
        return TDM_OK;
    }
    const char* s = nullptr;
    if (host->meta_get_string(src, (prefix + key).c_str(), &s) != TDM_OK || !s)
        return fail(err, err_size, TDM_ERR_BAD_MODEL, "%s", host->last_error());
    *out = s;
    return TDM_OK;
}

}  // namespace qwen
