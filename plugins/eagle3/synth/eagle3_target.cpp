// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/synth/eagle3_target.cpp: the shape of a synthetic EAGLE-3 head read from its
// target (see eagle3_synth.h): a GGUF file's "<arch>.*" keys or an HF config.json (flat, or
// under text_config), and the draft vocabulary picked from the seed.
#include "eagle3/synth/eagle3_synth.h"

#include "formats/model_source.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

namespace tdm::synth {
namespace {

// The few target hyper-parameters a head copies, under either layout's names.
struct TargetKeys {
    int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, head_dim = 0, n_ff = 0, n_vocab = 0;
    double rope_theta = 10000.0, rms_eps = 1e-6;
};

Result<TargetKeys> gguf_keys(const ModelSource& src) {
    const GgufFile& g = *src.gguf();
    const std::string a = src.architecture() + ".";
    TargetKeys k;
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
    if (!embd) return Error::format("eagle3 synth: {} has no token_embd.weight", src.path());
    k.n_vocab = embd->ne[1];
    return k;
}

Result<TargetKeys> hf_keys(const ModelSource& src) {
    const nlohmann::json* top = src.hf_config();
    if (!top) return Error::format("eagle3 synth: {} has no readable config.json", src.path());
    const nlohmann::json& c = top->contains("text_config") ? (*top)["text_config"] : *top;
    auto num = [&](const char* key, double dflt) -> Result<double> {
        auto it = c.find(key);
        if (it == c.end() || it->is_null()) {
            if (dflt < 0) return Error::format("eagle3 synth: {}: config.json lacks {}", src.path(), key);
            return dflt;
        }
        if (!it->is_number()) return Error::format("eagle3 synth: {}: config.json {} is not a number", src.path(), key);
        return it->get<double>();
    };
    TargetKeys k;
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

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

}  // namespace

Result<Eagle3Shape> eagle3_shape_for_target(const std::string& target) {
    if (target.empty())
        return Error("synth: --arch eagle3 needs --target FILE, the model the head drafts for (its shapes follow it)");
    const auto src = TDM_TRY_CTX(ModelSource::open(target), "--target");
    const TargetKeys k = TDM_TRY(src->format() == SourceFormat::gguf ? gguf_keys(*src) : hf_keys(*src));
    if (k.n_embd < 4 || k.n_embd % 4 || k.n_head < 1 || k.n_head_kv < 1 || k.n_head % k.n_head_kv || k.head_dim < 4 ||
        k.head_dim % 4 || k.n_ff < 1 || k.n_layer < 1 || k.n_vocab < 8 || k.n_vocab > (1 << 24))
        return Error::format("eagle3 synth: {}: the target's shape (n_embd {}, {} heads / {} KV heads of {}, n_ff {}, "
                             "{} layers, vocabulary {}) does not fit an EAGLE-3 head",
                             target, k.n_embd, k.n_head, k.n_head_kv, k.head_dim, k.n_ff, k.n_layer, k.n_vocab);
    Eagle3Shape s;
    s.n_embd = s.n_embd_target = int32_t(k.n_embd);
    s.n_head = int32_t(k.n_head);
    s.n_head_kv = int32_t(k.n_head_kv);
    s.head_dim = int32_t(k.head_dim);
    s.n_ff = int32_t(k.n_ff);
    s.n_vocab = int32_t(k.n_vocab);
    s.n_vocab_draft = std::max<int32_t>(4, int32_t(k.n_vocab / 2) / 4 * 4);
    s.rope_theta = float(k.rope_theta);
    s.rms_eps = float(k.rms_eps);
    const int32_t L = int32_t(k.n_layer);
    std::vector<int32_t> layers = L >= 6 ? std::vector<int32_t>{2, L / 2, L - 3} : std::vector<int32_t>{0, L / 2, L - 1};
    for (int32_t l : layers)
        if (std::find(s.target_layers.begin(), s.target_layers.end(), l) == s.target_layers.end())
            s.target_layers.push_back(l);
    return s;
}

std::vector<int64_t> eagle3_draft_ids(const Eagle3Shape& s, uint64_t seed) {
    // the n_vocab_draft ids of lowest hash, ascending: a fixed, seed-dependent subset
    std::vector<std::pair<uint64_t, int64_t>> scored(size_t(s.n_vocab));
    for (int64_t t = 0; t < s.n_vocab; ++t) scored[size_t(t)] = {splitmix64(seed * 0x100000001B3ull + uint64_t(t)), t};
    std::nth_element(scored.begin(), scored.begin() + s.n_vocab_draft, scored.end());
    std::vector<int64_t> ids;
    ids.reserve(size_t(s.n_vocab_draft));
    for (int32_t i = 0; i < s.n_vocab_draft; ++i) ids.push_back(scored[size_t(i)].second);
    std::sort(ids.begin(), ids.end());
    return ids;
}

}  // namespace tdm::synth
