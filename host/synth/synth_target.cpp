// SPDX-License-Identifier: Apache-2.0
// host/synth/synth_target.cpp: a target's shape for the draft heads' synthesizers
// (synth_target.h).
#include "synth/synth_target.h"

#include "formats/model_source.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>

namespace tdm::synth {
namespace {

Result<SynthTargetShape> gguf_keys(const ModelSource& src, std::string_view who) {
    const GgufFile& g = *src.gguf();
    const std::string a = src.architecture() + ".";
    SynthTargetShape k;
    k.n_embd = int64_t(TDM_TRY(g.get_uint(a + "embedding_length")));
    // llama.cpp counts a carried MTP/NextN layer in block_count; the head taps the trunk
    k.n_layer = int64_t(TDM_TRY(g.get_uint(a + "block_count"))) -
                int64_t(TDM_TRY(g.get_uint_or(a + "nextn_predict_layers", 0)));
    k.n_head = int64_t(TDM_TRY(g.get_uint(a + "attention.head_count")));
    k.n_head_kv = int64_t(TDM_TRY(g.get_uint_or(a + "attention.head_count_kv", uint64_t(k.n_head))));
    k.head_dim = int64_t(TDM_TRY(g.get_uint_or(a + "attention.key_length", uint64_t(k.n_embd / k.n_head))));
    k.n_ff = int64_t(TDM_TRY(g.get_uint(a + "feed_forward_length")));
    k.rope_theta = TDM_TRY(g.get_float_or(a + "rope.freq_base", 10000.0));
    k.rms_eps = TDM_TRY(g.get_float_or(a + "attention.layer_norm_rms_epsilon", 1e-6));
    const SourceTensor* embd = src.find("token_embd.weight");
    if (!embd) return Error::format("{}: {} has no token_embd.weight", who, src.path());
    k.n_vocab = embd->ne[1];
    return k;
}

Result<SynthTargetShape> hf_keys(const ModelSource& src, std::string_view who) {
    const nlohmann::json* top = src.hf_config();
    if (!top) return Error::format("{}: {} has no readable config.json", who, src.path());
    const nlohmann::json& c = top->contains("text_config") ? (*top)["text_config"] : *top;
    auto num = [&](const char* key, double dflt) -> Result<double> {
        auto it = c.find(key);
        if (it == c.end() || it->is_null()) {
            if (dflt < 0) return Error::format("{}: {}: config.json lacks {}", who, src.path(), key);
            return dflt;
        }
        if (!it->is_number()) return Error::format("{}: {}: config.json {} is not a number", who, src.path(), key);
        return it->get<double>();
    };
    SynthTargetShape k;
    k.n_embd = int64_t(TDM_TRY(num("hidden_size", -1)));
    k.n_layer = int64_t(TDM_TRY(num("num_hidden_layers", -1)));
    k.n_head = int64_t(TDM_TRY(num("num_attention_heads", -1)));
    k.n_head_kv = int64_t(TDM_TRY(num("num_key_value_heads", double(k.n_head))));
    k.head_dim = int64_t(TDM_TRY(num("head_dim", double(k.n_embd / std::max<int64_t>(k.n_head, 1)))));
    k.n_ff = int64_t(TDM_TRY(num("intermediate_size", -1)));
    k.n_vocab = int64_t(TDM_TRY(num("vocab_size", -1)));
    k.rope_theta = TDM_TRY(num("rope_theta", 10000.0));
    k.rms_eps = TDM_TRY(num("rms_norm_eps", 1e-6));
    return k;
}

}  // namespace

Result<SynthTargetShape> read_synth_target(const std::string& path, std::string_view who) {
    const auto src = TDM_TRY_CTX(ModelSource::open(path), "--target");
    return src->format() == SourceFormat::gguf ? gguf_keys(*src, who) : hf_keys(*src, who);
}

}  // namespace tdm::synth
