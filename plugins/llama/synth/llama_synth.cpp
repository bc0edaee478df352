// SPDX-License-Identifier: Apache-2.0
// plugins/llama/synth/llama_synth.cpp: presets, option checks, the parameter table and the two
// file layouts (GGUF as convert_hf_to_gguf.py + llama-quantize write Llama, HF as transformers
// saves LlamaForCausalLM) of the synthetic models described in llama_synth.h.
#include "llama/synth/llama_synth.h"

#include "common/quant.h"
#include "synth/synth_files.h"
#include "synth/synth_vocab.h"
#include "synth/synth_weights.h"
#include "writers/gguf_writer.h"
#include "writers/safetensors_writer.h"
#include "writers/vocab_gguf_writer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

namespace tdm::synth {
namespace {

constexpr float kSqrt3 = 1.7320508075688772f;
constexpr float kNormSpread = 0.2f;  // norm weights are 1 +- kNormSpread

struct Preset {
    std::string_view name;
    LlamaShape shape;
};

LlamaShape shape_of(int32_t n_vocab, int32_t n_embd, int32_t n_layer, int32_t n_head, int32_t n_head_kv,
                    int32_t head_dim, int32_t n_ff, int32_t n_ctx_train, bool tied,
                    std::optional<LlamaRopeScaling> scaling) {
    LlamaShape s;
    s.n_vocab = n_vocab;
    s.n_embd = n_embd;
    s.n_layer = n_layer;
    s.n_head = n_head;
    s.n_head_kv = n_head_kv;
    s.head_dim = head_dim;
    s.n_ff = n_ff;
    s.n_ctx_train = n_ctx_train;
    s.tied_embeddings = tied;
    s.rope_scaling = scaling;
    return s;
}

const std::vector<Preset>& presets() {
    // tiny: head_dim 16 at theta 5e5 gives four pairs shorter than the high-frequency
    // wavelength limit (kept), one between the limits (smoothed) and three longer than the
    // low-frequency one (divided by the factor): all three llama3 cases occur.
    static const std::vector<Preset> kPresets = {
        {"tiny", shape_of(512, 64, 2, 4, 2, 16, 128, 2048, false, LlamaRopeScaling{})},
        // meta-llama/Llama-3.2-1B config.json
        {"1b", shape_of(128256, 2048, 16, 32, 8, 64, 8192, 131072, true, LlamaRopeScaling{32.0f, 1.0f, 4.0f, 8192})},
        // meta-llama/Llama-3.1-8B config.json
        {"8b", shape_of(128256, 4096, 32, 32, 8, 128, 14336, 131072, false, LlamaRopeScaling{8.0f, 1.0f, 4.0f, 8192})},
    };
    return kPresets;
}

// In GGUF file order: token_embd, then per layer attn_norm, attn_q, attn_k, attn_v,
// attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, then output_norm and (untied) output.
std::vector<SynthParam> llama_params(const LlamaShape& s, bool tied) {
    const float sd_embd = 1.0f / std::sqrt(float(s.n_embd));
    const float sd_attn_out = 1.0f / std::sqrt(float(s.n_head * s.head_dim));
    const float sd_ff = 1.0f / std::sqrt(float(s.n_ff));
    const float sd_norm = kNormSpread / kSqrt3;
    const int64_t q_rows = int64_t(s.n_head) * s.head_dim;
    const int64_t kv_rows = int64_t(s.n_head_kv) * s.head_dim;
    std::vector<SynthParam> ps;
    ps.push_back(synth_param("token_embd.weight", "model.embed_tokens.weight", s.n_vocab, s.n_embd, ParamRole::token_embd,
                             2.0f * sd_embd));
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".";
        const std::string h = "model.layers." + std::to_string(il) + ".";
        ps.push_back(synth_param(g + "attn_norm.weight", h + "input_layernorm.weight", 1, s.n_embd, ParamRole::norm, sd_norm));
        ps.push_back(synth_param(g + "attn_q.weight", h + "self_attn.q_proj.weight", q_rows, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "attn_k.weight", h + "self_attn.k_proj.weight", kv_rows, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "attn_v.weight", h + "self_attn.v_proj.weight", kv_rows, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "attn_output.weight", h + "self_attn.o_proj.weight", s.n_embd, q_rows,
                                 ParamRole::residual_out, sd_attn_out));
        ps.push_back(synth_param(g + "ffn_norm.weight", h + "post_attention_layernorm.weight", 1, s.n_embd, ParamRole::norm,
                                 sd_norm));
        ps.push_back(synth_param(g + "ffn_gate.weight", h + "mlp.gate_proj.weight", s.n_ff, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "ffn_up.weight", h + "mlp.up_proj.weight", s.n_ff, s.n_embd, ParamRole::matrix, sd_embd));
        ps.push_back(synth_param(g + "ffn_down.weight", h + "mlp.down_proj.weight", s.n_embd, s.n_ff, ParamRole::residual_out,
                                 sd_ff));
    }
    ps.push_back(synth_param("output_norm.weight", "model.norm.weight", 1, s.n_embd, ParamRole::norm, sd_norm));
    if (!tied)
        ps.push_back(synth_param("output.weight", "lm_head.weight", s.n_vocab, s.n_embd, ParamRole::output, 2.0f * sd_embd));
    return ps;
}

WeightRecipe recipe_of(const LlamaSynthOptions& o, int32_t n_text) {
    WeightRecipe r;
    r.n_text = n_text;
    r.seed = o.seed;
    r.repeating = o.repeating;
    r.repeat_period = o.repeat_period;
    r.round_to = (o.weight_type == DType::F16 || o.weight_type == DType::BF16) ? o.weight_type : DType::F32;
    r.n_threads = o.n_threads > 0 ? o.n_threads : int(std::max(1u, std::thread::hardware_concurrency()));
    return r;
}

bool is_permuted(const SynthParam& p) {
    const std::string_view n = p.gguf_name;
    return n.ends_with("attn_q.weight") || n.ends_with("attn_k.weight");
}

std::string config_json(const LlamaShape& s, const LlamaSynthOptions& o, const SynthVocabLayout& l) {
    nlohmann::ordered_json j;
    j["architectures"] = {"LlamaForCausalLM"};
    j["attention_bias"] = false;
    j["attention_dropout"] = 0.0;
    j["bos_token_id"] = l.endoftext;
    j["eos_token_id"] = l.im_end;
    j["head_dim"] = s.head_dim;
    j["hidden_act"] = "silu";
    j["hidden_size"] = s.n_embd;
    j["initializer_range"] = 0.02;
    j["intermediate_size"] = s.n_ff;
    j["max_position_embeddings"] = s.n_ctx_train;
    j["mlp_bias"] = false;
    j["model_type"] = "llama";
    j["num_attention_heads"] = s.n_head;
    j["num_hidden_layers"] = s.n_layer;
    j["num_key_value_heads"] = s.n_head_kv;
    j["pretraining_tp"] = 1;
    j["rms_norm_eps"] = json_number(s.rms_eps);
    if (s.rope_scaling) {
        const LlamaRopeScaling& r = *s.rope_scaling;
        nlohmann::ordered_json rs;
        rs["factor"] = json_number(r.factor);
        rs["high_freq_factor"] = json_number(r.high_freq_factor);
        rs["low_freq_factor"] = json_number(r.low_freq_factor);
        rs["original_max_position_embeddings"] = r.original_context;
        rs["rope_type"] = "llama3";
        j["rope_scaling"] = rs;
    } else {
        j["rope_scaling"] = nullptr;
    }
    j["rope_theta"] = json_number(s.rope_theta);
    j["tie_word_embeddings"] = llama_is_tied(s, o);
    j["torch_dtype"] = torch_dtype_name(o.weight_type);
    j["transformers_version"] = "4.45.0";
    j["use_cache"] = true;
    j["vocab_size"] = s.n_vocab;
    return j.dump(2) + "\n";
}

}  // namespace

Result<LlamaShape> llama_preset(std::string_view name) {
    for (const Preset& p : presets())
        if (p.name == name) return p.shape;
    std::string known;
    for (const Preset& p : presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    return Error::format("unknown llama preset '{}' (known: {})", name, known);
}

std::vector<std::string_view> llama_preset_names() {
    std::vector<std::string_view> names;
    for (const Preset& p : presets()) names.push_back(p.name);
    return names;
}

bool llama_is_tied(const LlamaShape& shape, const LlamaSynthOptions& opts) {
    if (opts.repeating) return false;
    return opts.tied.value_or(shape.tied_embeddings);
}

Status validate_llama(const LlamaShape& s, const LlamaSynthOptions& o) {
    for (auto [field, v] : {std::pair{"n_embd", s.n_embd}, std::pair{"n_layer", s.n_layer},
                            std::pair{"n_head", s.n_head}, std::pair{"n_head_kv", s.n_head_kv},
                            std::pair{"head_dim", s.head_dim}, std::pair{"n_ff", s.n_ff},
                            std::pair{"n_ctx_train", s.n_ctx_train}})
        if (v <= 0) return Error::format("llama shape: {} must be positive, got {}", field, v);
    TDM_TRY(synth_vocab_layout(s.n_vocab));  // also the n_vocab check
    if (s.n_head % s.n_head_kv != 0)
        return Error::format("llama shape: n_head {} is not a multiple of n_head_kv {}", s.n_head, s.n_head_kv);
    if (s.head_dim % 2 != 0) return Error::format("llama shape: head_dim {} must be even (RoPE rotates pairs)", s.head_dim);
    if (!(s.rope_theta > 0.0f) || !std::isfinite(s.rope_theta))
        return Error::format("llama shape: rope_theta must be positive, got {}", s.rope_theta);
    if (!(s.rms_eps > 0.0f) || !std::isfinite(s.rms_eps))
        return Error::format("llama shape: rms_eps must be positive, got {}", s.rms_eps);
    if (s.rope_scaling && !(s.rope_scaling->high_freq_factor > s.rope_scaling->low_freq_factor &&
                            s.rope_scaling->low_freq_factor > 0.0f && s.rope_scaling->factor >= 1.0f &&
                            s.rope_scaling->original_context > 0))
        return Error("llama shape: rope scaling needs factor >= 1, 0 < low_freq_factor < high_freq_factor and a "
                     "positive original context");
    if (!is_synth_weight_type(o.weight_type))
        return Error::format("llama synth: weight type {} is not one of f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, "
                             "q5_K, q6_K",
                             ggml_type_name(uint32_t(o.weight_type)));
    if (o.repeating && o.tied.value_or(false))
        return Error("llama synth: the repeating model needs its own output matrix; it cannot be tied");
    if (o.repeat_period < 1) return Error::format("llama synth: repeat_period must be >= 1, got {}", o.repeat_period);
    if (o.n_threads < 0) return Error::format("llama synth: n_threads must be >= 0, got {}", o.n_threads);
    return {};
}

int64_t llama_gguf_row(int64_t hf_row, int64_t head_dim) {
    const int64_t head = hf_row / head_dim, r = hf_row % head_dim, half = head_dim / 2;
    // HF row r of a head is pair member s = r / half of pair j = r % half -> GGUF row 2j + s
    return head * head_dim + 2 * (r % half) + r / half;
}

std::vector<float> llama_rope_freqs(const LlamaShape& s) {
    std::vector<float> out(size_t(s.head_dim / 2), 1.0f);
    if (!s.rope_scaling) return out;
    const LlamaRopeScaling& r = *s.rope_scaling;
    const double low_wavelen = double(r.original_context) / r.low_freq_factor;
    const double high_wavelen = double(r.original_context) / r.high_freq_factor;
    for (int32_t i = 0; i < s.head_dim / 2; ++i) {
        // torch: 1 / base ** (arange(0, dim, 2, float32) / dim), in float32
        const float freq = 1.0f / std::pow(s.rope_theta, float(2 * i) / float(s.head_dim));
        const double wavelen = 2.0 * M_PI / double(freq);
        if (wavelen < high_wavelen)
            out[size_t(i)] = 1.0f;
        else if (wavelen > low_wavelen)
            out[size_t(i)] = r.factor;
        else {
            const double smooth =
                (double(r.original_context) / wavelen - r.low_freq_factor) / (double(r.high_freq_factor) - r.low_freq_factor);
            out[size_t(i)] = float(1.0 / ((1.0 - smooth) / r.factor + smooth));
        }
    }
    return out;
}

int32_t llama_repeat_successor(const LlamaShape& shape, const LlamaSynthOptions& opts, int32_t token) {
    const Result<SynthVocabLayout> l = synth_vocab_layout(shape.n_vocab);
    TDM_ASSERT_MSG(l.ok() && token >= 0 && token < shape.n_vocab && opts.repeat_period >= 1,
                   "llama_repeat_successor: invalid shape, period or token");
    return repeat_successor(token % l->n_text, l->n_text, opts.repeat_period);
}

Status synth_llama_gguf(const std::string& path, const LlamaShape& s, const LlamaSynthOptions& o) {
    TDM_TRY(validate_llama(s, o));
    const Vocab vocab = TDM_TRY(synth_vocab(s.n_vocab));
    const SynthVocabLayout layout = TDM_TRY(synth_vocab_layout(s.n_vocab));
    const WeightRecipe recipe = recipe_of(o, layout.n_text);

    // Keys in the order convert_hf_to_gguf.py writes them for Llama.
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_string("general.type", "model");
    w.add_string("general.name", o.name.empty() ? std::string("tandem synthetic llama") : o.name);
    w.add_u32("llama.block_count", uint32_t(s.n_layer));
    w.add_u32("llama.context_length", uint32_t(s.n_ctx_train));
    w.add_u32("llama.embedding_length", uint32_t(s.n_embd));
    w.add_u32("llama.feed_forward_length", uint32_t(s.n_ff));
    w.add_u32("llama.attention.head_count", uint32_t(s.n_head));
    w.add_u32("llama.attention.head_count_kv", uint32_t(s.n_head_kv));
    w.add_f32("llama.rope.freq_base", s.rope_theta);
    w.add_f32("llama.attention.layer_norm_rms_epsilon", s.rms_eps);
    w.add_u32("llama.attention.key_length", uint32_t(s.head_dim));
    w.add_u32("llama.attention.value_length", uint32_t(s.head_dim));
    w.add_u32("general.file_type", gguf_file_type(o.weight_type));
    w.add_u32("llama.vocab_size", uint32_t(s.n_vocab));
    w.add_u32("llama.rope.dimension_count", uint32_t(s.head_dim));
    TDM_TRY_CTX(write_vocab_gguf(vocab, w), path);
    w.add_string("tokenizer.chat_template", synth_chat_template());
    if (traits(o.weight_type).quantized) w.add_u32("general.quantization_version", kQuantizationVersion);

    if (s.rope_scaling) {  // the converter's extra tensor comes first
        const std::vector<float> f = llama_rope_freqs(s);
        std::vector<uint8_t> bytes(f.size() * sizeof(float));
        std::memcpy(bytes.data(), f.data(), bytes.size());
        TDM_TRY_CTX(w.add_tensor("rope_freqs.weight", uint32_t(DType::F32), {int64_t(f.size())}, std::move(bytes)), path);
    }
    for (const SynthParam& p : llama_params(s, llama_is_tied(s, o))) {
        // Norms stay F32 (the converter forces 1-D tensors to F32; llama-quantize skips them).
        const DType t = p.is_vector ? DType::F32 : gguf_row_type(o.weight_type, p.cols);
        const uint64_t rb = row_bytes(t, uint64_t(p.cols));
        std::vector<uint8_t> bytes(size_t(rb * uint64_t(p.rows)));
        encode_param(p, recipe, t, bytes.data());
        if (is_permuted(p)) {  // whole rows move, so any type permutes alike
            std::vector<uint8_t> hf = std::move(bytes);
            bytes.assign(hf.size(), 0);
            for (int64_t r = 0; r < p.rows; ++r)
                std::memcpy(bytes.data() + uint64_t(llama_gguf_row(r, s.head_dim)) * rb, hf.data() + uint64_t(r) * rb, rb);
        }
        std::vector<int64_t> ne = p.is_vector ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.cols, p.rows};
        TDM_TRY_CTX(w.add_tensor(p.gguf_name, uint32_t(t), std::move(ne), std::move(bytes)), path);
    }
    return w.write_file(path);
}

Status synth_llama_hf(const std::string& dir, const LlamaShape& s, const LlamaSynthOptions& o) {
    TDM_TRY(validate_llama(s, o));
    if (!is_hf_weight_type(o.weight_type))
        return Error::format("llama synth: HF checkpoints hold F32, F16 or BF16 weights; {} exists only as GGUF",
                             dtype_name(o.weight_type));
    const Vocab vocab = TDM_TRY(synth_vocab(s.n_vocab));
    const SynthVocabLayout layout = TDM_TRY(synth_vocab_layout(s.n_vocab));
    const WeightRecipe recipe = recipe_of(o, layout.n_text);

    TDM_TRY(make_directory(dir));
    TDM_TRY(write_text_file(dir + "/config.json", config_json(s, o, layout)));
    TDM_TRY(write_text_file(dir + "/tokenizer.json", synth_tokenizer_json(vocab)));
    TDM_TRY(write_text_file(dir + "/tokenizer_config.json", synth_tokenizer_config_json(vocab, s.n_ctx_train)));

    // HF stores every tensor, norms included, in torch_dtype; the values were rounded through
    // it already (WeightRecipe::round_to), so the GGUF's F32 norms hold the same numbers.
    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    const std::string dtype(safetensors_dtype_name(o.weight_type));
    for (const SynthParam& p : llama_params(s, llama_is_tied(s, o))) {
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
