// SPDX-License-Identifier: Apache-2.0
// plugins/gemma4/synth/gemma4_synth.cpp: the two file layouts of the synthetic Gemma 4 models
// (gemma4_synth.h): GGUF as convert_hf_to_gguf.py + llama-quantize write arch "gemma4", and the HF
// directory of a Gemma4ForConditionalGeneration checkpoint (text decoder only).
#include "gemma4/synth/gemma4_synth.h"

#include "common/quant.h"
#include "gemma4/synth/gemma4_params.h"
#include "gemma4/synth/gemma4_vocab.h"
#include "synth/synth_files.h"
#include "synth/synth_weights.h"
#include "writers/gguf_writer.h"
#include "writers/safetensors_writer.h"
#include "writers/vocab_gguf_writer.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace tdm::synth {
namespace {

using ojson = nlohmann::ordered_json;

constexpr std::string_view kDefaultName = "tandem synthetic gemma4";

// The released configs write these as floats ("rope_theta": 10000.0); json_number would make
// integers of whole values.
double as_double(float f) { return std::stod(fmt::format("{}", f)); }

std::string config_json(const Gemma4Shape& s, const Gemma4SynthOptions& o) {
    ojson j;
    j["architectures"] = {"Gemma4ForConditionalGeneration"};
    j["eos_token_id"] = {kGemma4Eos, kGemma4TurnEnd};
    j["initializer_range"] = 0.02;
    j["model_type"] = "gemma4";
    j["text_config"] = gemma4_text_config(s, o.hf_per_layer_config);
    j["tie_word_embeddings"] = true;
    j["torch_dtype"] = torch_dtype_name(o.weight_type);
    j["transformers_version"] = "5.0.0";
    return j.dump(2) + "\n";
}

// Per-layer INT32 arrays, as gguf-py writes Python int lists.
std::vector<int32_t> per_layer(const Gemma4Shape& s, int32_t (Gemma4Shape::*field)(int) const) {
    std::vector<int32_t> v;
    for (int il = 0; il < s.n_layer; ++il) v.push_back((s.*field)(il));
    return v;
}

void add_gemma4_keys(GgufWriter& w, const Gemma4Shape& s) {
    const std::string a = "gemma4.";
    w.add_u32(a + "context_length", uint32_t(s.n_ctx_train));
    w.add_u32(a + "embedding_length", uint32_t(s.n_embd));
    w.add_u32(a + "block_count", uint32_t(s.n_layer));
    const std::vector<int32_t> n_ff = per_layer(s, &Gemma4Shape::n_ff_at);
    bool uniform_ff = true;
    for (int32_t f : n_ff) uniform_ff = uniform_ff && f == n_ff[0];
    if (uniform_ff)
        w.add_u32(a + "feed_forward_length", uint32_t(s.n_ff));
    else
        w.add_array(a + "feed_forward_length", n_ff);
    w.add_u32(a + "attention.head_count", uint32_t(s.n_head));
    w.add_array(a + "attention.head_count_kv", per_layer(s, &Gemma4Shape::n_head_kv));
    w.add_f32(a + "rope.freq_base", s.rope_theta_full);
    w.add_f32(a + "rope.freq_base_swa", s.rope_theta_swa);
    w.add_f32(a + "attention.layer_norm_rms_epsilon", s.rms_eps);
    w.add_u32(a + "attention.key_length", uint32_t(s.head_dim_full));
    w.add_u32(a + "attention.value_length", uint32_t(s.head_dim_full));
    w.add_u32(a + "attention.key_length_swa", uint32_t(s.head_dim_swa));
    w.add_u32(a + "attention.value_length_swa", uint32_t(s.head_dim_swa));
    w.add_f32(a + "final_logit_softcapping", s.final_logit_softcapping);
    w.add_u32(a + "attention.sliding_window", uint32_t(s.sliding_window));
    std::vector<bool> swa;
    for (int il = 0; il < s.n_layer; ++il) swa.push_back(s.is_swa(il));
    w.add_array(a + "attention.sliding_window_pattern", swa);
    w.add_u32(a + "attention.shared_kv_layers", uint32_t(s.n_kv_shared));
    w.add_u32(a + "embedding_length_per_layer_input", uint32_t(s.n_embd_per_layer));
    // Full layers rotate their whole head (rope_freqs switches the unrotated slots off).
    w.add_u32(a + "rope.dimension_count", uint32_t(s.head_dim_full));
    w.add_u32(a + "rope.dimension_count_swa", uint32_t(s.head_dim_swa));
    if (s.is_moe()) {
        w.add_u32(a + "expert_count", uint32_t(s.n_expert));
        w.add_u32(a + "expert_used_count", uint32_t(s.n_expert_used));
        w.add_u32(a + "expert_feed_forward_length", uint32_t(s.n_ff_expert));
    }
}

}  // namespace

ojson gemma4_text_config(const Gemma4Shape& s, bool per_layer_config) {
    ojson layer_types = ojson::array();
    for (int il = 0; il < s.n_layer; ++il) layer_types.push_back(s.is_swa(il) ? "sliding_attention" : "full_attention");
    ojson j;
    j["model_type"] = "gemma4_text";
    j["attention_bias"] = false;
    j["attention_dropout"] = 0.0;
    j["attention_k_eq_v"] = s.k_eq_v;
    j["bos_token_id"] = kGemma4Bos;
    j["enable_moe_block"] = s.is_moe();
    j["eos_token_id"] = kGemma4Eos;
    j["final_logit_softcapping"] = as_double(s.final_logit_softcapping);
    if (!per_layer_config) j["global_head_dim"] = s.head_dim_full;
    j["head_dim"] = s.head_dim_swa;
    j["hidden_activation"] = "gelu_pytorch_tanh";
    j["hidden_size"] = s.n_embd;
    j["hidden_size_per_layer_input"] = s.n_embd_per_layer;
    j["initializer_range"] = 0.02;
    j["intermediate_size"] = s.n_ff;
    j["layer_types"] = std::move(layer_types);
    j["max_position_embeddings"] = s.n_ctx_train;
    j["moe_intermediate_size"] = s.is_moe() ? ojson(s.n_ff_expert) : ojson(nullptr);
    j["num_attention_heads"] = s.n_head;
    j["num_experts"] = s.is_moe() ? ojson(s.n_expert) : ojson(nullptr);
    // Only K=V models use a separate full-layer KV head count (spec §2); E2B/E4B write null.
    if (!per_layer_config) j["num_global_key_value_heads"] = s.k_eq_v ? ojson(s.n_head_kv_full) : ojson(nullptr);
    j["num_hidden_layers"] = s.n_layer;
    j["num_key_value_heads"] = s.n_head_kv_swa;
    j["num_kv_shared_layers"] = s.n_kv_shared;
    j["pad_token_id"] = kGemma4Pad;
    if (per_layer_config) {
        // The newer form: each full layer's overrides by index.
        ojson per_layer = ojson::object();
        for (int il = 0; il < s.n_layer; ++il)
            if (!s.is_swa(il))
                per_layer[std::to_string(il)] =
                    ojson{{"head_dim", s.head_dim_full}, {"num_key_value_heads", s.n_head_kv_full}};
        j["per_layer_config"] = std::move(per_layer);
    }
    j["rms_norm_eps"] = as_double(s.rms_eps);
    j["rope_parameters"] = ojson{
        {"full_attention", ojson{{"partial_rotary_factor", as_double(s.partial_rotary_factor)},
                                 {"rope_theta", as_double(s.rope_theta_full)},
                                 {"rope_type", "proportional"}}},
        {"sliding_attention", ojson{{"rope_theta", as_double(s.rope_theta_swa)}, {"rope_type", "default"}}}};
    j["sliding_window"] = s.sliding_window;
    j["tie_word_embeddings"] = true;
    j["top_k_experts"] = s.is_moe() ? ojson(s.n_expert_used) : ojson(nullptr);
    j["use_bidirectional_attention"] = nullptr;
    j["use_cache"] = true;
    j["use_double_wide_mlp"] = s.double_wide_mlp;
    j["vocab_size"] = s.n_vocab;
    j["vocab_size_per_layer_input"] = s.n_vocab_per_layer;
    return j;
}

Status synth_gemma4_gguf(const std::string& path, const Gemma4Shape& s, const Gemma4SynthOptions& o) {
    TDM_TRY(validate_gemma4(s, o));
    const Vocab vocab = TDM_TRY(gemma4_vocab(s.n_vocab));
    const WeightRecipe recipe = gemma4_recipe(o);

    GgufWriter w;
    w.add_string("general.architecture", "gemma4");
    w.add_string("general.type", "model");
    w.add_string("general.name", o.name.empty() ? std::string(kDefaultName) : o.name);
    add_gemma4_keys(w, s);
    w.add_u32("general.file_type", gguf_file_type(o.weight_type));
    TDM_TRY_CTX(write_vocab_gguf(vocab, w), path);
    w.add_string("tokenizer.chat_template", gemma4_chat_template());
    if (traits(o.weight_type).quantized) w.add_u32("general.quantization_version", kQuantizationVersion);

    TDM_TRY(add_gemma4_gguf_tensors(w, s, gemma4_params(s), recipe, o.weight_type, path));
    return w.write_file(path);
}

Status synth_gemma4_hf(const std::string& dir, const Gemma4Shape& s, const Gemma4SynthOptions& o) {
    TDM_TRY(validate_gemma4(s, o));
    if (!is_hf_weight_type(o.weight_type))
        return Error::format("gemma4 synth: HF checkpoints hold F32, F16 or BF16 weights; {} exists only as GGUF "
                             "(use synth_gemma4_gguf)",
                             dtype_name(o.weight_type));
    const Vocab vocab = TDM_TRY(gemma4_vocab(s.n_vocab));
    const WeightRecipe recipe = gemma4_recipe(o);

    TDM_TRY(make_directory(dir));
    TDM_TRY(write_text_file(dir + "/config.json", config_json(s, o)));
    TDM_TRY(write_text_file(dir + "/tokenizer.json", gemma4_tokenizer_json(vocab)));
    TDM_TRY(write_text_file(dir + "/tokenizer_config.json", gemma4_tokenizer_config_json(vocab, s.n_ctx_train)));

    // Every tensor in torch_dtype, norms included; the values were rounded through it already
    // (WeightRecipe::round_to), so the GGUF's F32 norms hold the same numbers.
    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    TDM_TRY(add_gemma4_hf_tensors(st, gemma4_params(s), recipe, o.weight_type));
    return st.write_file(dir + "/model.safetensors");
}

Status add_gemma4_gguf_tensors(GgufWriter& w, const Gemma4Shape& rope_shape, const std::vector<Gemma4Param>& params,
                               const WeightRecipe& recipe, DType weight_type, const std::string& path) {
    const std::vector<float> freqs = gemma4_rope_freqs(rope_shape);
    TDM_TRY_CTX(w.add_tensor("rope_freqs.weight", uint32_t(DType::F32), {int64_t(freqs.size())}, freqs.data(),
                             freqs.size() * sizeof(float)),
                path);
    for (const Gemma4Param& gp : params) {
        if (!gp.in_gguf) continue;
        const SynthParam& p = gp.param;
        const DType t = gp.gguf_f32 ? DType::F32 : gguf_row_type(weight_type, p.cols);
        std::vector<uint8_t> bytes(size_t(row_bytes(t, uint64_t(p.cols)) * uint64_t(p.rows)));
        encode_param(p, recipe, t, bytes.data());
        TDM_TRY_CTX(w.add_tensor(p.gguf_name, uint32_t(t), gp.gguf_ne, std::move(bytes)), path);
    }
    return {};
}

Status add_gemma4_hf_tensors(SafetensorsWriter& st, const std::vector<Gemma4Param>& params, const WeightRecipe& recipe,
                             DType weight_type) {
    const std::string dtype(safetensors_dtype_name(weight_type));
    for (const Gemma4Param& gp : params) {
        const SynthParam p = gp.param;
        TDM_TRY(st.add_tensor(p.hf_name, dtype, gp.hf_shape, [p, recipe, weight_type](uint8_t* dst) -> Status {
            encode_param(p, recipe, weight_type, dst);
            return {};
        }));
    }
    return {};
}

}  // namespace tdm::synth
