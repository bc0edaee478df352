// SPDX-License-Identifier: Apache-2.0
// plugins/dflash/synth/dflash_synth.cpp: the shape, the parameters and the two file layouts
// of synthetic DFlash heads (dflash_synth.h).
//
// HF (z-lab's): config.json (a Qwen3 config with block_size, num_target_layers and
// dflash_config {target_layer_ids, mask_token_id}) and model.safetensors (fc.weight,
// hidden_norm.weight, norm.weight, layers.N.{input_layernorm, post_attention_layernorm,
// self_attn.{q,k,v,o}_proj, self_attn.{q,k}_norm, mlp.{gate,up,down}_proj}.weight).
// GGUF (llama.cpp's "dflash", as its converter writes z-lab's checkpoint): keys
// dflash.block_count, context_length, embedding_length, feed_forward_length,
// attention.head_count, attention.head_count_kv, attention.key_length,
// attention.value_length, rope.dimension_count, rope.freq_base,
// attention.layer_norm_rms_epsilon, vocab_size, target_layers (INT32: z-lab's ids + 1, the
// layers whose input is tapped), target_hidden_size, block_size and
// tokenizer.ggml.mask_token_id; tensors fc.weight, enc.output_norm.weight (hidden_norm),
// output_norm.weight, blk.N.{attn_norm, attn_q, attn_k, attn_v, attn_output, attn_q_norm,
// attn_k_norm, ffn_norm, ffn_gate, ffn_up, ffn_down}.weight. The same weights in both, q/k
// unpermuted (llama.cpp runs DFlash with NeoX RoPE, as HF does).
#include "dflash/synth/dflash_synth.h"

#include "synth/synth_files.h"
#include "synth/synth_target.h"
#include "writers/gguf_writer.h"
#include "writers/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <thread>

namespace tdm::synth {
namespace {

constexpr float kNormSigma = 0.2f / 1.7320508f;  // norms 1 +- 0.2, uniform
constexpr int32_t kContext = 4096;

std::string config_json(const DflashShape& s, const DflashSynthOptions& o) {
    nlohmann::ordered_json j;
    j["architectures"] = {"DFlashDraftModel"};
    j["model_type"] = "qwen3";
    j["hidden_act"] = "silu";
    j["hidden_size"] = s.n_embd;
    j["intermediate_size"] = s.n_ff;
    j["num_attention_heads"] = s.n_head;
    j["num_key_value_heads"] = s.n_head_kv;
    j["head_dim"] = s.head_dim;
    j["num_hidden_layers"] = s.n_layer;
    j["num_target_layers"] = s.n_target_layers;
    j["block_size"] = s.block_size;
    j["max_position_embeddings"] = kContext;
    j["rms_norm_eps"] = json_number(s.rms_eps);
    j["rope_theta"] = json_number(s.rope_theta);
    j["rope_scaling"] = nullptr;
    j["tie_word_embeddings"] = false;
    j["vocab_size"] = s.n_vocab;
    j["dflash_config"] = {{"target_layer_ids", s.target_layers}, {"mask_token_id", s.mask_token}};
    j["torch_dtype"] = torch_dtype_name(o.weight_type);
    return j.dump(2) + "\n";
}

WeightRecipe dflash_recipe(const DflashSynthOptions& o) {
    WeightRecipe r;
    r.seed = o.seed;
    r.round_to = (o.weight_type == DType::F16 || o.weight_type == DType::BF16) ? o.weight_type : DType::F32;
    r.n_threads = o.n_threads > 0 ? o.n_threads : int(std::max(1u, std::thread::hardware_concurrency()));
    return r;
}

}  // namespace

Result<DflashShape> dflash_shape_for_target(const std::string& target, int32_t n_layer, int32_t block_size) {
    if (target.empty())
        return Error("synth: --arch dflash needs --target FILE, the model the head drafts for (its shapes follow it)");
    const SynthTargetShape k = TDM_TRY(read_synth_target(target, "dflash synth"));
    if (k.n_embd < 4 || k.n_embd % 4 || k.n_head < 1 || k.n_head_kv < 1 || k.n_head % k.n_head_kv || k.head_dim < 4 ||
        k.head_dim % 4 || k.n_ff < 1 || k.n_layer < 5 || k.n_vocab < 8 || k.n_vocab > (1 << 24))
        return Error::format("dflash synth: {}: the target's shape (n_embd {}, {} heads / {} KV heads of {}, n_ff {}, "
                             "{} layers, vocabulary {}) does not fit a DFlash head (it needs 5 or more layers)",
                             target, k.n_embd, k.n_head, k.n_head_kv, k.head_dim, k.n_ff, k.n_layer, k.n_vocab);
    if (n_layer < 1 || n_layer > 16) return Error::format("dflash synth: --layers {}: 1 to 16", n_layer);
    if (block_size < 2 || block_size > 64) return Error::format("dflash synth: --block-size {}: 2 to 64", block_size);
    DflashShape s;
    s.n_layer = n_layer;
    s.n_embd = int32_t(k.n_embd);
    s.n_head = int32_t(k.n_head);
    s.n_head_kv = int32_t(k.n_head_kv);
    s.head_dim = int32_t(k.head_dim);
    s.n_ff = int32_t(k.n_ff);
    s.n_vocab = int32_t(k.n_vocab);
    s.n_target_layers = int32_t(k.n_layer);
    s.block_size = block_size;
    s.mask_token = s.n_vocab - 1;
    s.rope_theta = float(k.rope_theta);
    s.rms_eps = float(k.rms_eps);
    const int32_t L = s.n_target_layers;
    if (n_layer == 1)
        s.target_layers = {L / 2};
    else
        for (int32_t i = 0; i < n_layer; ++i)
            s.target_layers.push_back(int32_t(std::nearbyint(1.0 + double(i) * double(L - 4) / double(n_layer - 1))));
    s.target_layers.erase(std::unique(s.target_layers.begin(), s.target_layers.end()), s.target_layers.end());
    return s;
}

std::vector<SynthParam> dflash_params(const DflashShape& s) {
    const int64_t H = s.n_embd, F = s.n_ff, D = s.head_dim;
    const int64_t q_rows = int64_t(s.n_head) * D, kv_rows = int64_t(s.n_head_kv) * D;
    const int64_t fc_in = int64_t(s.target_layers.size()) * H;
    const float sd_fc = 1.0f / std::sqrt(float(fc_in)), sd_h = 1.0f / std::sqrt(float(H));
    const float sd_q = 1.0f / std::sqrt(float(q_rows)), sd_f = 1.0f / std::sqrt(float(F));
    std::vector<SynthParam> ps;
    ps.push_back(synth_param("fc.weight", "fc.weight", H, fc_in, ParamRole::matrix, sd_fc));
    ps.push_back(synth_param("enc.output_norm.weight", "hidden_norm.weight", 1, H, ParamRole::norm, kNormSigma));
    for (int32_t il = 0; il < s.n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".", p = "layers." + std::to_string(il) + ".";
        ps.push_back(synth_param(g + "attn_norm.weight", p + "input_layernorm.weight", 1, H, ParamRole::norm, kNormSigma));
        ps.push_back(synth_param(g + "attn_q.weight", p + "self_attn.q_proj.weight", q_rows, H, ParamRole::matrix, sd_h));
        ps.push_back(synth_param(g + "attn_k.weight", p + "self_attn.k_proj.weight", kv_rows, H, ParamRole::matrix, sd_h));
        ps.push_back(synth_param(g + "attn_v.weight", p + "self_attn.v_proj.weight", kv_rows, H, ParamRole::matrix, sd_h));
        ps.push_back(
            synth_param(g + "attn_output.weight", p + "self_attn.o_proj.weight", H, q_rows, ParamRole::residual_out, sd_q));
        ps.push_back(synth_param(g + "attn_q_norm.weight", p + "self_attn.q_norm.weight", 1, D, ParamRole::norm, kNormSigma));
        ps.push_back(synth_param(g + "attn_k_norm.weight", p + "self_attn.k_norm.weight", 1, D, ParamRole::norm, kNormSigma));
        ps.push_back(
            synth_param(g + "ffn_norm.weight", p + "post_attention_layernorm.weight", 1, H, ParamRole::norm, kNormSigma));
        ps.push_back(synth_param(g + "ffn_gate.weight", p + "mlp.gate_proj.weight", F, H, ParamRole::matrix, sd_h));
        ps.push_back(synth_param(g + "ffn_up.weight", p + "mlp.up_proj.weight", F, H, ParamRole::matrix, sd_h));
        ps.push_back(synth_param(g + "ffn_down.weight", p + "mlp.down_proj.weight", H, F, ParamRole::residual_out, sd_f));
    }
    ps.push_back(synth_param("output_norm.weight", "norm.weight", 1, H, ParamRole::norm, kNormSigma));
    return ps;
}

Status synth_dflash_gguf(const std::string& path, const DflashShape& s, const DflashSynthOptions& o) {
    if (!is_synth_weight_type(o.weight_type))
        return Error::format("dflash synth: type {} is not written", dtype_name(o.weight_type));
    const WeightRecipe recipe = dflash_recipe(o);
    GgufWriter w;
    const std::string k = "dflash.";
    w.add_string("general.architecture", "dflash");
    w.add_string("general.type", "model");
    w.add_string("general.name", "tandem synthetic dflash");
    w.add_u32(k + "block_count", uint32_t(s.n_layer));
    w.add_u32(k + "context_length", uint32_t(kContext));
    w.add_u32(k + "embedding_length", uint32_t(s.n_embd));
    w.add_u32(k + "feed_forward_length", uint32_t(s.n_ff));
    w.add_u32(k + "attention.head_count", uint32_t(s.n_head));
    w.add_u32(k + "attention.head_count_kv", uint32_t(s.n_head_kv));
    w.add_u32(k + "attention.key_length", uint32_t(s.head_dim));
    w.add_u32(k + "attention.value_length", uint32_t(s.head_dim));
    w.add_u32(k + "rope.dimension_count", uint32_t(s.head_dim));
    w.add_f32(k + "rope.freq_base", s.rope_theta);
    w.add_f32(k + "attention.layer_norm_rms_epsilon", s.rms_eps);
    w.add_u32(k + "vocab_size", uint32_t(s.n_vocab));
    std::vector<int32_t> taps;  // llama.cpp taps the input of layer l + 1: the output of layer l
    for (int32_t l : s.target_layers) taps.push_back(l + 1);
    w.add_array(k + "target_layers", taps);
    w.add_u32(k + "target_hidden_size", uint32_t(s.n_embd));
    w.add_u32(k + "block_size", uint32_t(s.block_size));
    w.add_u32("tokenizer.ggml.mask_token_id", uint32_t(s.mask_token));
    w.add_u32("general.file_type", gguf_file_type(o.weight_type));
    if (traits(o.weight_type).quantized) w.add_u32("general.quantization_version", kQuantizationVersion);
    for (const SynthParam& p : dflash_params(s)) {
        const DType t = p.is_vector ? DType::F32 : gguf_row_type(o.weight_type, p.cols);
        std::vector<uint8_t> bytes(size_t(row_bytes(t, uint64_t(p.cols)) * uint64_t(p.rows)));
        encode_param(p, recipe, t, bytes.data());
        std::vector<int64_t> ne = p.is_vector ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.cols, p.rows};
        TDM_TRY_CTX(w.add_tensor(p.gguf_name, uint32_t(t), std::move(ne), std::move(bytes)), path);
    }
    return w.write_file(path);
}

Status synth_dflash_hf(const std::string& dir, const DflashShape& s, const DflashSynthOptions& o) {
    if (!is_hf_weight_type(o.weight_type))
        return Error::format("dflash synth: HF checkpoints hold F32, F16 or BF16 weights, not {}",
                             dtype_name(o.weight_type));
    const WeightRecipe recipe = dflash_recipe(o);
    TDM_TRY(make_directory(dir));
    TDM_TRY(write_text_file(dir + "/config.json", config_json(s, o)));
    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    const std::string dtype(safetensors_dtype_name(o.weight_type));
    for (const SynthParam& p : dflash_params(s)) {
        std::vector<int64_t> shape = p.is_vector ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.rows, p.cols};
        const DType t = o.weight_type;
        TDM_TRY(st.add_tensor(p.hf_name, dtype, std::move(shape), [p, recipe, t](uint8_t* dst) -> Status {
            encode_param(p, recipe, t, dst);
            return {};
        }));
    }
    return st.write_file(dir + "/model.safetensors");
}

}  // namespace tdm::synth
