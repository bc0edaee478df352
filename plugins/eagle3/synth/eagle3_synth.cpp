// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/synth/eagle3_synth.cpp: the parameters and the two file layouts of synthetic
// EAGLE-3 heads (eagle3_synth.h).
//
// GGUF (llama.cpp's "eagle3"): keys eagle3.block_count (1), context_length, embedding_length,
// feed_forward_length, attention.head_count, attention.head_count_kv, attention.key_length,
// attention.value_length, rope.dimension_count, rope.freq_base,
// attention.layer_norm_rms_epsilon, vocab_size, target_layers (INT32 array),
// target_hidden_size, norm_before_residual; tensors fc.weight, blk.0.{attn_norm, attn_norm_2,
// attn_q, attn_k, attn_v, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}.weight,
// output_norm.weight, output.weight, d2t (I64 target ids); rope_freqs.weight with llama3 scaling.
// HF (LlamaForCausalLMEagle3): fc.weight, midlayer.{input_layernorm, hidden_norm, self_attn.*,
// post_attention_layernorm, mlp.*}.weight, norm.weight, lm_head.weight, d2t (I64 offsets),
// t2d (BOOL over the target vocabulary).
#include "eagle3/synth/eagle3_synth.h"

#include "synth/synth_files.h"
#include "writers/gguf_writer.h"
#include "writers/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

namespace tdm::synth {
namespace {

constexpr float kNormSigma = 0.2f / 1.7320508f;  // norms 1 +- 0.2, uniform
constexpr int32_t kContext = 4096;

bool is_permuted(const SynthParam& p) { return p.gguf_name == "blk.0.attn_q.weight" || p.gguf_name == "blk.0.attn_k.weight"; }

std::string config_json(const Eagle3Shape& s, const Eagle3SynthOptions& o) {
    nlohmann::ordered_json j;
    j["architectures"] = {"LlamaForCausalLMEagle3"};
    j["model_type"] = "llama";
    j["hidden_act"] = "silu";
    j["hidden_size"] = s.n_embd;
    j["intermediate_size"] = s.n_ff;
    j["num_attention_heads"] = s.n_head;
    j["num_key_value_heads"] = s.n_head_kv;
    j["head_dim"] = s.head_dim;
    j["num_hidden_layers"] = 1;
    j["max_position_embeddings"] = kContext;
    j["rms_norm_eps"] = json_number(s.rms_eps);
    j["rope_theta"] = json_number(s.rope_theta);
    if (s.rope_scaling)
        j["rope_scaling"] = {{"factor", json_number(s.rope_scaling->factor)},
                             {"high_freq_factor", json_number(s.rope_scaling->high_freq_factor)},
                             {"low_freq_factor", json_number(s.rope_scaling->low_freq_factor)},
                             {"original_max_position_embeddings", s.rope_scaling->original_context},
                             {"rope_type", "llama3"}};
    else
        j["rope_scaling"] = nullptr;
    j["tie_word_embeddings"] = false;
    j["vocab_size"] = s.n_vocab;
    j["draft_vocab_size"] = s.n_vocab_draft;
    j["target_hidden_size"] = s.n_embd_target;
    j["eagle_config"] = {{"eagle_aux_hidden_state_layer_ids", s.target_layers}, {"use_aux_hidden_state", true}};
    j["torch_dtype"] = torch_dtype_name(o.weight_type);
    return j.dump(2) + "\n";
}

std::vector<uint8_t> i64_bytes(const std::vector<int64_t>& v) {
    std::vector<uint8_t> bytes(v.size() * 8);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    return bytes;
}

Status validate(const Eagle3Shape& s) {
    if (s.n_embd < 4 || s.n_head < 1 || s.n_head_kv < 1 || s.n_head % s.n_head_kv || s.head_dim % 4 ||
        s.n_vocab_draft < 4 || s.n_vocab_draft % 4 || s.n_vocab_draft > s.n_vocab || s.target_layers.empty())
        return Error("eagle3 synth: inconsistent head shape");
    return {};
}

}  // namespace

std::vector<SynthParam> eagle3_params(const Eagle3Shape& s) {
    const int64_t H = s.n_embd, F = s.n_ff, D = s.head_dim;
    const int64_t q_rows = int64_t(s.n_head) * D, kv_rows = int64_t(s.n_head_kv) * D;
    const int64_t fc_in = int64_t(s.target_layers.size()) * s.n_embd_target;
    const float sd_fc = 1.0f / std::sqrt(float(fc_in)), sd_2h = 1.0f / std::sqrt(float(2 * H));
    const float sd_h = 1.0f / std::sqrt(float(H)), sd_q = 1.0f / std::sqrt(float(q_rows)), sd_f = 1.0f / std::sqrt(float(F));
    const std::string g = "blk.0.", h = "midlayer.";
    std::vector<SynthParam> ps;
    ps.push_back(synth_param("fc.weight", "fc.weight", H, fc_in, ParamRole::matrix, sd_fc));
    ps.push_back(synth_param(g + "attn_norm.weight", h + "input_layernorm.weight", 1, H, ParamRole::norm, kNormSigma));
    ps.push_back(synth_param(g + "attn_norm_2.weight", h + "hidden_norm.weight", 1, H, ParamRole::norm, kNormSigma));
    ps.push_back(synth_param(g + "attn_q.weight", h + "self_attn.q_proj.weight", q_rows, 2 * H, ParamRole::matrix, sd_2h));
    ps.push_back(synth_param(g + "attn_k.weight", h + "self_attn.k_proj.weight", kv_rows, 2 * H, ParamRole::matrix, sd_2h));
    ps.push_back(synth_param(g + "attn_v.weight", h + "self_attn.v_proj.weight", kv_rows, 2 * H, ParamRole::matrix, sd_2h));
    ps.push_back(synth_param(g + "attn_output.weight", h + "self_attn.o_proj.weight", H, q_rows, ParamRole::residual_out, sd_q));
    ps.push_back(synth_param(g + "ffn_norm.weight", h + "post_attention_layernorm.weight", 1, H, ParamRole::norm, kNormSigma));
    ps.push_back(synth_param(g + "ffn_gate.weight", h + "mlp.gate_proj.weight", F, H, ParamRole::matrix, sd_h));
    ps.push_back(synth_param(g + "ffn_up.weight", h + "mlp.up_proj.weight", F, H, ParamRole::matrix, sd_h));
    ps.push_back(synth_param(g + "ffn_down.weight", h + "mlp.down_proj.weight", H, F, ParamRole::residual_out, sd_f));
    ps.push_back(synth_param("output_norm.weight", "norm.weight", 1, H, ParamRole::norm, kNormSigma));
    ps.push_back(synth_param("output.weight", "lm_head.weight", s.n_vocab_draft, H, ParamRole::matrix, 4.0f * sd_h));
    return ps;
}

WeightRecipe eagle3_recipe(const Eagle3SynthOptions& o) {
    WeightRecipe r;
    r.seed = o.seed;
    r.round_to = (o.weight_type == DType::F16 || o.weight_type == DType::BF16) ? o.weight_type : DType::F32;
    r.n_threads = o.n_threads > 0 ? o.n_threads : int(std::max(1u, std::thread::hardware_concurrency()));
    return r;
}

std::vector<float> eagle3_rope_freqs(const Eagle3Shape& s) {
    std::vector<float> out(size_t(s.head_dim / 2), 1.0f);
    if (!s.rope_scaling) return out;
    const Eagle3RopeScaling& r = *s.rope_scaling;
    const double two_pi = 6.283185307179586;
    const double low_wavelen = double(r.original_context) / r.low_freq_factor;
    const double high_wavelen = double(r.original_context) / r.high_freq_factor;
    for (int32_t i = 0; i < s.head_dim / 2; ++i) {
        const float freq = 1.0f / std::pow(s.rope_theta, float(2 * i) / float(s.head_dim));  // f32, as the converter
        const double wavelen = two_pi / double(freq);
        if (wavelen > low_wavelen) {
            out[size_t(i)] = r.factor;
        } else if (wavelen >= high_wavelen) {
            const double smooth = (double(r.original_context) / wavelen - r.low_freq_factor) /
                                  (double(r.high_freq_factor) - r.low_freq_factor);
            out[size_t(i)] = float(1.0 / ((1.0 - smooth) / r.factor + smooth));
        }
    }
    return out;
}

int64_t eagle3_gguf_row(int64_t hf_row, int64_t head_dim) {
    const int64_t head = hf_row / head_dim, r = hf_row % head_dim, half = head_dim / 2;
    // HF row r of a head is member r / half of pair r % half -> GGUF row 2 (r % half) + r / half
    return head * head_dim + 2 * (r % half) + r / half;
}

Status synth_eagle3_gguf(const std::string& path, const Eagle3Shape& s, const Eagle3SynthOptions& o) {
    TDM_TRY(validate(s));
    if (!is_synth_weight_type(o.weight_type))
        return Error::format("eagle3 synth: type {} is not written", dtype_name(o.weight_type));
    const WeightRecipe recipe = eagle3_recipe(o);
    GgufWriter w;
    const std::string k = "eagle3.";
    w.add_string("general.architecture", "eagle3");
    w.add_string("general.type", "model");
    w.add_string("general.name", "tandem synthetic eagle3");
    w.add_u32(k + "block_count", 1);
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
    w.add_array(k + "target_layers", s.target_layers);
    w.add_u32(k + "target_hidden_size", uint32_t(s.n_embd_target));
    w.add_bool(k + "norm_before_residual", false);
    w.add_u32("general.file_type", gguf_file_type(o.weight_type));
    if (traits(o.weight_type).quantized) w.add_u32("general.quantization_version", kQuantizationVersion);
    if (s.rope_scaling) {  // the converter's divisors, first as it writes them
        const std::vector<float> f = eagle3_rope_freqs(s);
        TDM_TRY_CTX(w.add_tensor("rope_freqs.weight", uint32_t(DType::F32), {int64_t(f.size())}, f.data(),
                                 f.size() * sizeof(float)),
                    path);
    }
    for (const SynthParam& p : eagle3_params(s)) {
        const DType t = p.is_vector ? DType::F32 : gguf_row_type(o.weight_type, p.cols);
        const uint64_t rb = row_bytes(t, uint64_t(p.cols));
        std::vector<uint8_t> bytes(size_t(rb * uint64_t(p.rows)));
        encode_param(p, recipe, t, bytes.data());
        if (is_permuted(p)) {  // whole rows move, so any type permutes alike
            std::vector<uint8_t> hf = std::move(bytes);
            bytes.assign(hf.size(), 0);
            for (int64_t r = 0; r < p.rows; ++r)
                std::memcpy(bytes.data() + uint64_t(eagle3_gguf_row(r, s.head_dim)) * rb, hf.data() + uint64_t(r) * rb, rb);
        }
        std::vector<int64_t> ne = p.is_vector ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.cols, p.rows};
        TDM_TRY_CTX(w.add_tensor(p.gguf_name, uint32_t(t), std::move(ne), std::move(bytes)), path);
    }
    // llama.cpp's graph indexes target ids with d2t directly: absolute ids
    TDM_TRY_CTX(w.add_tensor("d2t", uint32_t(DType::I64), {s.n_vocab_draft}, i64_bytes(eagle3_draft_ids(s, o.seed))),
                path);
    return w.write_file(path);
}

Status synth_eagle3_hf(const std::string& dir, const Eagle3Shape& s, const Eagle3SynthOptions& o) {
    TDM_TRY(validate(s));
    if (!is_hf_weight_type(o.weight_type))
        return Error::format("eagle3 synth: HF checkpoints hold F32, F16 or BF16 weights; {} exists only as GGUF",
                             dtype_name(o.weight_type));
    const WeightRecipe recipe = eagle3_recipe(o);
    TDM_TRY(make_directory(dir));
    TDM_TRY(write_text_file(dir + "/config.json", config_json(s, o)));
    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    const std::string dtype(safetensors_dtype_name(o.weight_type));
    for (const SynthParam& p : eagle3_params(s)) {
        std::vector<int64_t> shape = p.is_vector ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.rows, p.cols};
        const DType t = o.weight_type;
        TDM_TRY(st.add_tensor(p.hf_name, dtype, std::move(shape), [p, recipe, t](uint8_t* dst) -> Status {
            encode_param(p, recipe, t, dst);
            return {};
        }));
    }
    // the EAGLE authors' buffers: d2t[j] = target id - j, t2d[t] = t is a draft id
    const std::vector<int64_t> ids = eagle3_draft_ids(s, o.seed);
    std::vector<int64_t> offsets(ids.size());
    std::vector<uint8_t> t2d(size_t(s.n_vocab), 0);
    for (size_t j = 0; j < ids.size(); ++j) {
        offsets[j] = ids[j] - int64_t(j);
        t2d[size_t(ids[j])] = 1;
    }
    TDM_TRY(st.add_tensor("d2t", "I64", {int64_t(offsets.size())}, i64_bytes(offsets)));
    TDM_TRY(st.add_tensor("t2d", "BOOL", {int64_t(s.n_vocab)}, std::move(t2d)));
    return st.write_file(dir + "/model.safetensors");
}

}  // namespace tdm::synth
