// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/metadata_queries.cpp
#include "metadata_queries.h"

#include "fuzz_support.h"
#include "plugin/handles.h"

#include <array>
#include <cstring>
#include <string>

namespace tdm::fuzz {

void query_metadata(const ModelSource& source, std::string_view key_view) {
    const tdm_host_api* api = host_api();
    tdm_model_source src;
    src.src = &source;
    const std::string key(key_view);
    const char* k = key.c_str();
    const bool has = api->meta_has(&src, k) != 0;

    int64_t i = 0;
    double d = 0;
    int b = 0;
    const char* s = nullptr;
    const tdm_status si = api->meta_get_int(&src, k, &i);
    const tdm_status sd = api->meta_get_float(&src, k, &d);
    const tdm_status sb = api->meta_get_bool(&src, k, &b);
    const tdm_status ss = api->meta_get_string(&src, k, &s);
    if (!has) {
        // an absent key is absent to every accessor; a key the host will not read
        // (longer than a plugin name may be) is refused by every accessor alike
        FUZZ_CHECK(si == sd && sd == sb && sb == ss);
        FUZZ_CHECK(si == TDM_ERR_NOT_FOUND || si == TDM_ERR_INVALID_ARGUMENT);
    }
    if (sb == TDM_OK) FUZZ_CHECK(b == 0 || b == 1);
    if (ss == TDM_OK) {
        FUZZ_CHECK(s != nullptr);
        (void)std::strlen(s);
        const char* again = nullptr;  // the same storage when asked again (tandem.h)
        FUZZ_CHECK(api->meta_get_string(&src, k, &again) == TDM_OK && again == s);
    }
    if (si != TDM_OK || sd != TDM_OK || sb != TDM_OK || ss != TDM_OK) {
        const char* msg = api->last_error();
        FUZZ_CHECK(msg != nullptr);
    }

    // Arrays: never more than `cap` elements written, the full length reported.
    constexpr uint64_t kCap = 4;
    std::array<int64_t, kCap + 1> ints{};
    std::array<double, kCap + 1> floats{};
    ints[kCap] = 0x5a5a5a5a;
    floats[kCap] = 1234.5;
    uint64_t n = 0;
    if (api->meta_get_int_array(&src, k, ints.data(), kCap, &n) == TDM_OK && n <= kCap) {
        std::array<int64_t, kCap> again{};
        uint64_t n2 = 0;
        FUZZ_CHECK(api->meta_get_int_array(&src, k, again.data(), kCap, &n2) == TDM_OK && n2 == n);
    }
    (void)api->meta_get_int_array(&src, k, nullptr, 0, &n);
    (void)api->meta_get_float_array(&src, k, floats.data(), kCap, &n);
    FUZZ_CHECK(ints[kCap] == 0x5a5a5a5a && floats[kCap] == 1234.5);

    tdm_tensor_info info{};
    (void)api->tensor_info(&src, k, &info);
}

void query_plugin_keys(const ModelSource& source) {
    static constexpr const char* kKeys[] = {
        "general.architecture", "qwen3.block_count", "qwen3.embedding_length", "qwen3.rope.freq_base",
        "qwen35.rope.dimension_sections", "qwen35.full_attention_interval", "qwen35.nextn_predict_layers",
        "gemma4.attention.sliding_window_pattern",
        "tokenizer.ggml.tokens", "tokenizer.ggml.merges", "tokenizer.ggml.token_type",
        "model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
        "head_dim", "rms_norm_eps", "rope_theta", "max_position_embeddings", "tie_word_embeddings",
        "layer_types", "layer_types.0", "layer_types.3", "layer_types.", "text_config.hidden_size",
        "text_config.layer_types.1", "rope_parameters.mrope_section", "rope_scaling.mrope_section.0",
        "partial_rotary_factor", "mtp_num_hidden_layers", "num_experts", "torch_dtype", "", ".", "..",
        "a..b", "layer_types.99999999999", "layer_types.-1",
    };
    for (const char* key : kKeys) query_metadata(source, key);
    for (const SourceTensor& t : source.tensors()) query_metadata(source, t.name);
}

}  // namespace tdm::fuzz
