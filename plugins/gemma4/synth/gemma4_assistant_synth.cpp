// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/synth/gemma4_assistant_synth.cpp: the two file layouts of the synthetic Gemma 4
// assistants (gemma4_assistant.h): GGUF as llama.cpp writes arch "gemma4-assistant", and the HF
// directory of a Gemma4AssistantForCausalLM checkpoint.
//
// GGUF keys (prefix "gemma4-assistant."): context_length, embedding_length (Ha),
// embedding_length_out (Hb), block_count, nextn_predict_layers (= block_count),
// feed_forward_length, attention.head_count, attention.head_count_kv (INT32 per layer: the
// target's KV heads of the layer's type), attention.key_length / value_length (full head dim),
// attention.key_length_swa / value_length_swa, attention.sliding_window,
// attention.sliding_window_pattern (BOOL per layer), attention.layer_norm_rms_epsilon,
// rope.dimension_count / rope.dimension_count_swa, rope.freq_base / rope.freq_base_swa,
// final_logit_softcapping (only when set), centroid_intermediate_top_k (ordered head only; the
// spec names no GGUF key for it, this is HF's field name, which the plugin reads).
#include "gemma4/synth/gemma4_assistant.h"

#include "common/quant.h"
#include "synth/synth_files.h"
#include "synth/synth_weights.h"
#include "writers/gguf_writer.h"
#include "writers/safetensors_writer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstring>

namespace tdm::synth {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kDefaultName = "tandem synthetic gemma4-assistant";
// What HF's Gemma4AssistantConfig holds when the head is not ordered (it serializes them anyway).
constexpr int32_t kHfDefaultCentroids = 2048;
constexpr int32_t kHfDefaultTopK = 32;

// The assistant's decoder as a gemma4_text shape, for its text_config: its own width, heads, MLP
// and layer types; everything it reads of the target (head dims, KV heads, window, RoPE) the
// target's; every layer KV-shared (it has no K/V of its own), no per-layer inputs, no MoE.
Gemma4Shape text_shape(const Gemma4AssistantShape& a) {
    Gemma4Shape s = a.target;
    s.n_embd = a.n_embd;
    s.n_layer = a.n_layer();
    s.n_head = a.n_head;
    s.layer_types = a.layer_types;
    s.n_ff = a.n_ff;
    s.double_wide_mlp = false;
    s.n_expert = s.n_expert_used = s.n_ff_expert = 0;
    s.n_kv_shared = a.n_layer();
    s.n_embd_per_layer = 0;
    s.n_vocab_per_layer = 0;
    s.final_logit_softcapping = a.final_logit_softcapping;
    return s;
}

std::string config_json(const Gemma4AssistantShape& a, const Gemma4SynthOptions& o) {
    ojson tc = gemma4_text_config(text_shape(a), o.hf_per_layer_config);
    // null, not 0.0, when unset: HF then applies none (E2B's assistant)
    if (a.final_logit_softcapping == 0.0f) tc["final_logit_softcapping"] = nullptr;
    ojson j;
    j["architectures"] = {"Gemma4AssistantForCausalLM"};
    j["backbone_hidden_size"] = a.n_embd_backbone();
    j["centroid_intermediate_top_k"] = a.ordered ? a.n_centroids_top_k : kHfDefaultTopK;
    j["model_type"] = "gemma4_assistant";
    j["num_centroids"] = a.ordered ? a.n_centroids : kHfDefaultCentroids;
    j["text_config"] = std::move(tc);
    j["tie_word_embeddings"] = true;
    j["torch_dtype"] = torch_dtype_name(o.weight_type);
    j["transformers_version"] = "5.0.0";
    j["use_ordered_embeddings"] = a.ordered;
    return j.dump(2) + "\n";
}

void add_assistant_keys(GgufWriter& w, const Gemma4AssistantShape& a) {
    const std::string k = "gemma4-assistant.";
    const Gemma4Shape& t = a.target;
    w.add_u32(k + "context_length", uint32_t(t.n_ctx_train));
    w.add_u32(k + "embedding_length", uint32_t(a.n_embd));
    w.add_u32(k + "embedding_length_out", uint32_t(a.n_embd_backbone()));
    w.add_u32(k + "block_count", uint32_t(a.n_layer()));
    w.add_u32(k + "nextn_predict_layers", uint32_t(a.n_layer()));
    w.add_u32(k + "feed_forward_length", uint32_t(a.n_ff));
    w.add_u32(k + "attention.head_count", uint32_t(a.n_head));
    std::vector<int32_t> kv;
    std::vector<bool> swa;
    for (int il = 0; il < a.n_layer(); ++il) {
        kv.push_back(a.n_head_kv(il));
        swa.push_back(a.is_swa(il));
    }
    w.add_array(k + "attention.head_count_kv", kv);
    w.add_u32(k + "attention.key_length", uint32_t(t.head_dim_full));
    w.add_u32(k + "attention.value_length", uint32_t(t.head_dim_full));
    w.add_u32(k + "attention.key_length_swa", uint32_t(t.head_dim_swa));
    w.add_u32(k + "attention.value_length_swa", uint32_t(t.head_dim_swa));
    w.add_u32(k + "attention.sliding_window", uint32_t(t.sliding_window));
    w.add_array(k + "attention.sliding_window_pattern", swa);
    w.add_f32(k + "attention.layer_norm_rms_epsilon", t.rms_eps);
    // full layers rotate their whole head; rope_freqs switches the unrotated slots off
    w.add_u32(k + "rope.dimension_count", uint32_t(t.head_dim_full));
    w.add_u32(k + "rope.dimension_count_swa", uint32_t(t.head_dim_swa));
    w.add_f32(k + "rope.freq_base", t.rope_theta_full);
    w.add_f32(k + "rope.freq_base_swa", t.rope_theta_swa);
    if (a.final_logit_softcapping > 0.0f) w.add_f32(k + "final_logit_softcapping", a.final_logit_softcapping);
    if (a.ordered) w.add_u32(k + "centroid_intermediate_top_k", uint32_t(a.n_centroids_top_k));
}

template <class Int>
std::vector<uint8_t> int_bytes(const std::vector<int64_t>& ids) {
    std::vector<uint8_t> bytes(ids.size() * sizeof(Int));
    for (size_t i = 0; i < ids.size(); ++i) {
        const Int v = Int(ids[i]);
        std::memcpy(bytes.data() + i * sizeof(Int), &v, sizeof(Int));
    }
    return bytes;
}

}  // namespace

Status synth_gemma4_assistant_gguf(const std::string& path, const Gemma4AssistantShape& a,
                                   const Gemma4SynthOptions& o) {
    TDM_TRY(validate_gemma4_assistant(a, o));
    const WeightRecipe recipe = gemma4_assistant_recipe(o);

    GgufWriter w;
    w.add_string("general.architecture", "gemma4-assistant");
    w.add_string("general.type", "model");
    w.add_string("general.name", o.name.empty() ? std::string(kDefaultName) : o.name);
    add_assistant_keys(w, a);
    w.add_u32("general.file_type", gguf_file_type(o.weight_type));
    if (traits(o.weight_type).quantized) w.add_u32("general.quantization_version", kQuantizationVersion);

    // rope_freqs of the target: the assistant's queries meet the target's keys, rotated alike.
    TDM_TRY(add_gemma4_gguf_tensors(w, a.target, gemma4_assistant_params(a), recipe, o.weight_type, path));
    if (a.ordered) {
        const std::vector<int64_t> ids = gemma4_assistant_ordering(a, o.seed);
        TDM_TRY_CTX(w.add_tensor("masked_embd_ordering.weight", uint32_t(DType::I32), {int64_t(ids.size())},
                                 int_bytes<int32_t>(ids)),
                    path);
    }
    return w.write_file(path);
}

Status synth_gemma4_assistant_hf(const std::string& dir, const Gemma4AssistantShape& a,
                                 const Gemma4SynthOptions& o) {
    TDM_TRY(validate_gemma4_assistant(a, o));
    if (!is_hf_weight_type(o.weight_type))
        return Error::format("gemma4-assistant synth: HF checkpoints hold F32, F16 or BF16 weights; {} exists only "
                             "as GGUF (use synth_gemma4_assistant_gguf)",
                             dtype_name(o.weight_type));
    const WeightRecipe recipe = gemma4_assistant_recipe(o);

    TDM_TRY(make_directory(dir));
    TDM_TRY(write_text_file(dir + "/config.json", config_json(a, o)));

    // Every tensor in torch_dtype, norms included; the values were rounded through it already
    // (WeightRecipe::round_to), so the GGUF's F32 norms hold the same numbers.
    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    TDM_TRY(add_gemma4_hf_tensors(st, gemma4_assistant_params(a), recipe, o.weight_type));
    if (a.ordered) {
        const std::vector<int64_t> ids = gemma4_assistant_ordering(a, o.seed);
        TDM_TRY(st.add_tensor("masked_embedding.token_ordering", "I64", {int64_t(ids.size())}, int_bytes<int64_t>(ids)));
    }
    return st.write_file(dir + "/model.safetensors");
}

}  // namespace tdm::synth
