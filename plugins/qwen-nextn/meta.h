// plugins/qwen-nextn/meta.h: checked reads of model metadata (GGUF keys or
// config.json paths). Every value is range-checked before it sizes anything
// (plugin contract rule 7); errors name the file, the key and the range.
#pragma once

#include <tandem/tandem.h>

#include <string>

namespace qwen {

// Writes a printf-style message into a callback's err buffer and returns st.
tdm_status fail(char* err, size_t err_size, tdm_status st, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));

struct MetaReader {
    const tdm_host_api* host;
    const tdm_model_source* src;
    char* err;
    size_t err_size;
    std::string prefix;  // prepended to every key ("qwen35." or "text_config.")

    bool has(const char* key) const;
    // Required integer in [lo, hi].
    tdm_status u32(const char* key, uint32_t lo, uint32_t hi, uint32_t* out) const;
    tdm_status u32_or(const char* key, uint32_t lo, uint32_t hi, uint32_t dflt, uint32_t* out) const;
    tdm_status f32_or(const char* key, float dflt, float* out) const;
    tdm_status bool_or(const char* key, bool dflt, bool* out) const;
    // Integer array of exactly n elements, each in [lo, hi]; `found` is false
    // (and out untouched) when the key is absent.
    tdm_status u32_array(const char* key, uint32_t n, uint32_t lo, uint32_t hi, uint32_t* out, bool* found) const;
    tdm_status string_or(const char* key, const char* dflt, std::string* out) const;
};

#define QWEN_TRY(x)                    \
    do {                               \
        tdm_status st_ = (x);          \
        if (st_ != TDM_OK) return st_; \
    } while (0)

}  // namespace qwen
