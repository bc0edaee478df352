// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/synth/qwen35_synth.cpp: presets, option checks, the vocabulary, and the two
// file layouts of the synthetic Qwen3.5 models described in qwen35_synth.h.
//
// GGUF metadata, in the order convert_hf_to_gguf.py writes it for Qwen3_5TextModel /
// Qwen3_5MoeTextModel (TextModel.set_gguf_parameters, then Qwen2MoeModel, Qwen3NextModel,
// _Qwen35MRopeMixin and _Qwen35MtpMixin), with %s = qwen35 or qwen35moe:
//   general.architecture, general.type, general.name,
//   %s.block_count (trunk + MTP layers), %s.context_length, %s.embedding_length,
//   %s.feed_forward_length (dense only: the MoE text config has no intermediate_size),
//   %s.attention.head_count, %s.attention.head_count_kv,
//   %s.rope.dimension_sections (INT32[4], zero padded), %s.rope.freq_base,
//   %s.attention.layer_norm_rms_epsilon, [%s.expert_count, %s.expert_used_count],
//   %s.attention.key_length, %s.attention.value_length, general.file_type,
//   [%s.expert_feed_forward_length, %s.expert_shared_feed_forward_length],
//   %s.ssm.conv_kernel, %s.ssm.state_size (dk), %s.ssm.group_count (Nk),
//   %s.ssm.time_step_rank (Nv), %s.ssm.inner_size (Nv * dv), %s.full_attention_interval,
//   %s.rope.dimension_count (n_rot), [%s.nextn_predict_layers = 1],
//   general.quantization_version, tokenizer.ggml.*, tokenizer.chat_template.
#include "qwen-nextn/synth/qwen35_synth.h"

#include "common/quant.h"
#include "qwen-nextn/synth/qwen35_params.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "synth/synth_files.h"
#include "synth/synth_vocab.h"
#include "writers/gguf_writer.h"
#include "writers/safetensors_writer.h"
#include "writers/vocab_gguf_writer.h"

#include <nlohmann/json.hpp>

#include <thread>

namespace tdm::synth {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int32_t kExtraSpecials = 2;         // <think>, </think> on top of synth_vocab's three

// The Qwen3.5 pre-tokenizer regex (docs/tokenizers.md §3.2: the letter class absorbs \p{M}).
constexpr std::string_view kQwen35Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// ChatML with a thinking block opened by the generation prompt (docs/models/qwen35.md §5).
constexpr std::string_view kChatTemplate =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}"
    "{%- else %}{{- '<think>\\n' }}{%- endif %}{%- endif %}";

struct Preset {
    std::string_view name;
    Qwen35Shape shape;
};

Qwen35Shape tiny_shape() {
    Qwen35Shape s;
    s.n_vocab = 512;
    s.n_embd = 64;
    s.n_layer = 4;  // GDN, GDN, GDN, attention
    s.n_head = 4;
    s.n_head_kv = 2;
    s.head_dim = 64;
    s.n_rot = 16;
    s.mrope_sections = {3, 3, 2};  // {11, 11, 10} scaled to 8 slots
    s.n_ff = 128;
    s.linear_n_k_heads = 2;
    s.linear_n_v_heads = 4;  // r = 2: grouped and tiled orders differ
    s.linear_d_k = 16;
    s.linear_d_v = 16;
    s.n_ctx_train = 4096;
    return s;
}

const std::vector<Preset>& presets() {
    static const std::vector<Preset> kPresets = [] {
        Qwen35Shape tiny = tiny_shape();
        Qwen35Shape moe = tiny_shape();
        moe.n_ff = 0;
        moe.n_expert = 8;
        moe.n_expert_used = 2;
        moe.n_ff_exp = 32;
        moe.n_ff_shexp = 64;
        // Qwen/Qwen3.5-0.8B text_config (docs/models/qwen35.md §1).
        Qwen35Shape b08;
        b08.n_vocab = 248320;
        b08.n_embd = 1024;
        b08.n_layer = 24;
        b08.n_head = 8;
        b08.n_head_kv = 2;
        b08.head_dim = 256;
        b08.n_rot = 64;
        b08.mrope_sections = {11, 11, 10};
        b08.n_ff = 3584;
        b08.linear_n_k_heads = 16;
        b08.linear_n_v_heads = 16;
        b08.linear_d_k = 128;
        b08.linear_d_v = 128;
        b08.n_ctx_train = 262144;
        b08.tied_embeddings = true;
        return std::vector<Preset>{{"tiny", tiny}, {"tiny-moe", moe}, {"0.8b", b08}};
    }();
    return kPresets;
}

Qwen35Gen make_gen(const Qwen35Shape& s, const Qwen35SynthOptions& o, int32_t n_text) {
    Qwen35Gen g;
    g.shape = &s;
    g.recipe.seed = o.seed;
    g.recipe.repeating = o.repeating;
    g.recipe.repeat_period = o.repeat_period;
    g.recipe.n_text = n_text;
    g.recipe.round_to = (o.weight_type == DType::F16 || o.weight_type == DType::BF16) ? o.weight_type : DType::F32;
    g.recipe.n_threads = o.n_threads > 0 ? o.n_threads : int(std::max(1u, std::thread::hardware_concurrency()));
    return g;
}

ojson text_config(const Qwen35Shape& s, const Qwen35SynthOptions& o, const Qwen35VocabLayout& l) {
    ojson layer_types = ojson::array();
    for (int32_t il = 0; il < s.n_layer; ++il)
        layer_types.push_back(s.is_full_attention(il) ? "full_attention" : "linear_attention");
    ojson rope;
    rope["mrope_interleaved"] = true;
    rope["mrope_section"] = {s.mrope_sections[0], s.mrope_sections[1], s.mrope_sections[2]};
    rope["partial_rotary_factor"] = json_number(float(s.n_rot) / float(s.head_dim));
    rope["rope_theta"] = json_number(s.rope_theta);
    rope["rope_type"] = "default";

    ojson j;
    j["attention_bias"] = false;
    j["attention_dropout"] = 0.0;
    j["attn_output_gate"] = true;
    j["bos_token_id"] = l.endoftext;
    j["dtype"] = torch_dtype_name(o.weight_type);
    j["eos_token_id"] = l.endoftext;  // the released configs name <|endoftext|> here
    j["full_attention_interval"] = s.full_attention_interval;
    j["head_dim"] = s.head_dim;
    j["hidden_act"] = "silu";
    j["hidden_size"] = s.n_embd;
    j["initializer_range"] = 0.02;
    if (!s.is_moe()) j["intermediate_size"] = s.n_ff;
    j["layer_types"] = std::move(layer_types);
    j["linear_conv_kernel_dim"] = s.linear_conv_kernel;
    j["linear_key_head_dim"] = s.linear_d_k;
    j["linear_num_key_heads"] = s.linear_n_k_heads;
    j["linear_num_value_heads"] = s.linear_n_v_heads;
    j["linear_value_head_dim"] = s.linear_d_v;
    j["mamba_ssm_dtype"] = "float32";
    j["max_position_embeddings"] = s.n_ctx_train;
    j["model_type"] = s.is_moe() ? "qwen3_5_moe_text" : "qwen3_5_text";
    if (s.is_moe()) {
        j["moe_intermediate_size"] = s.n_ff_exp;
        j["num_experts"] = s.n_expert;
        j["num_experts_per_tok"] = s.n_expert_used;
    }
    j["mtp_num_hidden_layers"] = qwen35_has_mtp(s, o) ? 1 : 0;
    j["mtp_use_dedicated_embeddings"] = false;
    j["num_attention_heads"] = s.n_head;
    j["num_hidden_layers"] = s.n_layer;
    j["num_key_value_heads"] = s.n_head_kv;
    j["rms_norm_eps"] = json_number(s.rms_eps);
    j["rope_parameters"] = std::move(rope);
    if (s.is_moe()) {
        j["output_router_logits"] = false;
        j["router_aux_loss_coef"] = 0.001;
        j["shared_expert_intermediate_size"] = s.n_ff_shexp;
    }
    j["tie_word_embeddings"] = qwen35_is_tied(s, o);
    j["use_cache"] = true;
    j["vocab_size"] = s.n_vocab;
    return j;
}

// The multimodal wrapper config.json, without vision_config: the synthetic models have no
// vision tower (model.visual.* would be ignored by a text-only loader anyway).
std::string config_json(const Qwen35Shape& s, const Qwen35SynthOptions& o, const Qwen35VocabLayout& l) {
    ojson j;
    j["architectures"] = {s.is_moe() ? "Qwen3_5MoeForConditionalGeneration" : "Qwen3_5ForConditionalGeneration"};
    j["model_type"] = s.is_moe() ? "qwen3_5_moe" : "qwen3_5";
    j["text_config"] = text_config(s, o, l);
    j["tie_word_embeddings"] = qwen35_is_tied(s, o);
    j["transformers_version"] = "4.57.0.dev0";
    return j.dump(2) + "\n";
}

std::string tokenizer_json(const Vocab& v) {
    ojson j = ojson::parse(synth_tokenizer_json(v));
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = std::string(kQwen35Regex);
    return j.dump(2) + "\n";
}

std::string tokenizer_config_json(const Vocab& v, int64_t model_max_length) {
    ojson j = ojson::parse(synth_tokenizer_config_json(v, model_max_length));
    j["chat_template"] = std::string(kChatTemplate);
    return j.dump(2) + "\n";
}

Status positive(std::string_view field, int64_t v) {
    if (v <= 0) return Error::format("qwen35 shape: {} must be positive, got {}", field, v);
    return {};
}

}  // namespace

Result<Qwen35Shape> qwen35_preset(std::string_view name) {
    for (const Preset& p : presets())
        if (p.name == name) return p.shape;
    std::string known;
    for (const Preset& p : presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    return Error::format("unknown qwen35 preset '{}' (known: {})", name, known);
}

std::vector<std::string_view> qwen35_preset_names() {
    std::vector<std::string_view> names;
    for (const Preset& p : presets()) names.push_back(p.name);
    return names;
}

bool qwen35_is_tied(const Qwen35Shape& shape, const Qwen35SynthOptions& opts) {
    if (opts.repeating) return false;
    return opts.tied.value_or(shape.tied_embeddings);
}

bool qwen35_has_mtp(const Qwen35Shape& shape, const Qwen35SynthOptions& opts) { return opts.mtp.value_or(shape.mtp); }

std::string_view qwen35_arch(const Qwen35Shape& shape) { return shape.is_moe() ? "qwen35moe" : "qwen35"; }

int32_t qwen35_grouped_to_tiled(int32_t head, int32_t n_k_heads, int32_t n_v_heads) {
    const int32_t r = n_v_heads / n_k_heads;
    return (head % r) * n_k_heads + head / r;
}

int32_t qwen35_tiled_to_grouped(int32_t head, int32_t n_k_heads, int32_t n_v_heads) {
    const int32_t r = n_v_heads / n_k_heads;
    return (head % n_k_heads) * r + head / n_k_heads;
}

Result<Qwen35VocabLayout> qwen35_vocab_layout(int32_t n_vocab) {
    if (n_vocab < 256 + 3 + kExtraSpecials)
        return Error::format("qwen35 vocabulary: n_vocab {} is too small: it needs at least {} ids (256 byte symbols "
                             "and 5 special tokens)",
                             n_vocab, 256 + 3 + kExtraSpecials);
    const SynthVocabLayout base = TDM_TRY(synth_vocab_layout(n_vocab - kExtraSpecials));
    Qwen35VocabLayout l;
    l.n_vocab = n_vocab;
    l.n_text = base.n_text;
    l.endoftext = base.endoftext;
    l.im_start = base.im_start;
    l.im_end = base.im_end;
    l.think = base.im_end + 1;
    l.think_end = base.im_end + 2;
    return l;
}

Result<Vocab> qwen35_vocab(int32_t n_vocab) {
    const Qwen35VocabLayout l = TDM_TRY(qwen35_vocab_layout(n_vocab));
    Vocab v = TDM_TRY(synth_vocab(n_vocab - kExtraSpecials));
    // synth_vocab's ids up to <|im_end|> stay; <think> and </think> follow; PADs are renumbered.
    v.tokens.resize(size_t(l.im_end + 1));
    v.types.resize(size_t(l.im_end + 1));
    for (std::string_view s : {"<think>", "</think>"}) {
        v.tokens.emplace_back(s);
        v.types.push_back(TokenType::user_defined);
    }
    for (int32_t id = l.think_end + 1; id < n_vocab; ++id) {
        v.tokens.push_back("[PAD" + std::to_string(id) + "]");
        v.types.push_back(TokenType::unused);
    }
    v.pre = PreTokenizer::qwen35;
    v.source = fmt::format("synthetic qwen35 vocabulary ({} ids)", n_vocab);
    TDM_TRY(validate_vocab(v));
    return v;
}

Status validate_qwen35(const Qwen35Shape& s, const Qwen35SynthOptions& o) {
    TDM_TRY(positive("n_embd", s.n_embd));
    TDM_TRY(positive("n_layer", s.n_layer));
    TDM_TRY(positive("full_attention_interval", s.full_attention_interval));
    TDM_TRY(positive("n_head", s.n_head));
    TDM_TRY(positive("n_head_kv", s.n_head_kv));
    TDM_TRY(positive("head_dim", s.head_dim));
    TDM_TRY(positive("n_rot", s.n_rot));
    TDM_TRY(positive("linear_n_k_heads", s.linear_n_k_heads));
    TDM_TRY(positive("linear_n_v_heads", s.linear_n_v_heads));
    TDM_TRY(positive("linear_d_k", s.linear_d_k));
    TDM_TRY(positive("linear_d_v", s.linear_d_v));
    TDM_TRY(positive("linear_conv_kernel", s.linear_conv_kernel));
    TDM_TRY(positive("n_ctx_train", s.n_ctx_train));
    TDM_TRY(qwen35_vocab_layout(s.n_vocab));  // also the n_vocab check
    if (s.n_head % s.n_head_kv != 0)
        return Error::format("qwen35 shape: n_head {} is not a multiple of n_head_kv {}", s.n_head, s.n_head_kv);
    if (s.n_rot % 2 != 0 || s.n_rot > s.head_dim)
        return Error::format("qwen35 shape: n_rot {} must be even and at most head_dim {}", s.n_rot, s.head_dim);
    const int32_t sections = s.mrope_sections[0] + s.mrope_sections[1] + s.mrope_sections[2];
    if (s.mrope_sections[0] < 0 || s.mrope_sections[1] < 0 || s.mrope_sections[2] < 0 || sections != s.n_rot / 2)
        return Error::format("qwen35 shape: mrope_sections {{{}, {}, {}}} must be >= 0 and sum to n_rot / 2 = {}",
                             s.mrope_sections[0], s.mrope_sections[1], s.mrope_sections[2], s.n_rot / 2);
    if (s.linear_n_v_heads % s.linear_n_k_heads != 0)
        return Error::format("qwen35 shape: linear_n_v_heads {} is not a multiple of linear_n_k_heads {}",
                             s.linear_n_v_heads, s.linear_n_k_heads);
    if (s.is_moe()) {
        if (s.n_ff != 0)
            return Error::format("qwen35 shape: n_ff must be 0 for a MoE shape (every layer is MoE), got {}", s.n_ff);
        TDM_TRY(positive("n_ff_exp", s.n_ff_exp));
        TDM_TRY(positive("n_ff_shexp", s.n_ff_shexp));
        if (s.n_expert_used < 1 || s.n_expert_used > s.n_expert)
            return Error::format("qwen35 shape: n_expert_used {} must be between 1 and n_expert {}", s.n_expert_used,
                                 s.n_expert);
    } else {
        if (s.n_expert < 0) return Error::format("qwen35 shape: n_expert must be >= 0, got {}", s.n_expert);
        TDM_TRY(positive("n_ff", s.n_ff));
    }
    if (!(s.rope_theta > 0.0f) || !std::isfinite(s.rope_theta))
        return Error::format("qwen35 shape: rope_theta must be positive, got {}", s.rope_theta);
    if (!(s.rms_eps > 0.0f) || !std::isfinite(s.rms_eps))
        return Error::format("qwen35 shape: rms_eps must be positive, got {}", s.rms_eps);

    if (!is_synth_weight_type(o.weight_type))
        return Error::format("qwen35 synth: weight type {} is not one of f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K",
                             ggml_type_name(uint32_t(o.weight_type)));
    if (o.repeating && o.tied.value_or(false))
        return Error("qwen35 synth: the repeating model needs its own output matrix; it cannot be tied");
    if (o.repeat_period < 1) return Error::format("qwen35 synth: repeat_period must be >= 1, got {}", o.repeat_period);
    if (o.hf_fused_experts && !s.is_moe())
        return Error("qwen35 synth: hf_fused_experts needs a MoE shape (n_expert > 0)");
    if (o.n_threads < 0) return Error::format("qwen35 synth: n_threads must be >= 0, got {}", o.n_threads);
    return {};
}

int32_t qwen35_repeat_successor(const Qwen35Shape& shape, const Qwen35SynthOptions& opts, int32_t token) {
    const Result<Qwen35VocabLayout> l = qwen35_vocab_layout(shape.n_vocab);
    TDM_ASSERT_MSG(l.ok() && token >= 0 && token < shape.n_vocab && opts.repeat_period >= 1,
                   "qwen35_repeat_successor: invalid shape, period or token");
    return repeat_successor(token % l->n_text, l->n_text, opts.repeat_period);
}

Status synth_qwen35_gguf(const std::string& path, const Qwen35Shape& s, const Qwen35SynthOptions& o) {
    TDM_TRY(validate_qwen35(s, o));
    const Vocab vocab = TDM_TRY(qwen35_vocab(s.n_vocab));
    const Qwen35VocabLayout layout = TDM_TRY(qwen35_vocab_layout(s.n_vocab));
    const Qwen35Gen gen = make_gen(s, o, layout.n_text);
    const std::string arch(qwen35_arch(s));
    const bool mtp = qwen35_has_mtp(s, o);
    auto key = [&](std::string_view k) { return arch + "." + std::string(k); };

    GgufWriter w;
    w.add_string("general.architecture", arch);
    w.add_string("general.type", "model");
    w.add_string("general.name", o.name.empty() ? "tandem synthetic " + arch : o.name);
    w.add_u32(key("block_count"), uint32_t(s.n_layer + (mtp ? 1 : 0)));
    w.add_u32(key("context_length"), uint32_t(s.n_ctx_train));
    w.add_u32(key("embedding_length"), uint32_t(s.n_embd));
    if (!s.is_moe()) w.add_u32(key("feed_forward_length"), uint32_t(s.n_ff));
    w.add_u32(key("attention.head_count"), uint32_t(s.n_head));
    w.add_u32(key("attention.head_count_kv"), uint32_t(s.n_head_kv));
    w.add_array(key("rope.dimension_sections"),
                std::vector<int32_t>{s.mrope_sections[0], s.mrope_sections[1], s.mrope_sections[2], 0});
    w.add_f32(key("rope.freq_base"), s.rope_theta);
    w.add_f32(key("attention.layer_norm_rms_epsilon"), s.rms_eps);
    if (s.is_moe()) {
        w.add_u32(key("expert_count"), uint32_t(s.n_expert));
        w.add_u32(key("expert_used_count"), uint32_t(s.n_expert_used));
    }
    w.add_u32(key("attention.key_length"), uint32_t(s.head_dim));
    w.add_u32(key("attention.value_length"), uint32_t(s.head_dim));
    w.add_u32("general.file_type", gguf_file_type(o.weight_type));
    if (s.is_moe()) {
        w.add_u32(key("expert_feed_forward_length"), uint32_t(s.n_ff_exp));
        w.add_u32(key("expert_shared_feed_forward_length"), uint32_t(s.n_ff_shexp));
    }
    w.add_u32(key("ssm.conv_kernel"), uint32_t(s.linear_conv_kernel));
    w.add_u32(key("ssm.state_size"), uint32_t(s.linear_d_k));
    w.add_u32(key("ssm.group_count"), uint32_t(s.linear_n_k_heads));
    w.add_u32(key("ssm.time_step_rank"), uint32_t(s.linear_n_v_heads));
    w.add_u32(key("ssm.inner_size"), uint32_t(s.linear_value_dim()));
    w.add_u32(key("full_attention_interval"), uint32_t(s.full_attention_interval));
    w.add_u32(key("rope.dimension_count"), uint32_t(s.n_rot));
    if (mtp) w.add_u32(key("nextn_predict_layers"), 1);
    w.add_u32("general.quantization_version", kQuantizationVersion);
    TDM_TRY_CTX(write_vocab_gguf(vocab, w), path);
    w.add_string("tokenizer.chat_template", kChatTemplate);

    for (const Qwen35Param& p : qwen35_table(s, o).params) {
        const DType t = qwen35_gguf_type(p, o.weight_type);
        std::vector<uint8_t> bytes(size_t(row_bytes(t, uint64_t(p.cols)) * uint64_t(p.rows)));
        qwen35_encode_rows(p.rows, p.cols, t, gen.recipe.n_threads, bytes.data(),
                           [&](int64_t r0, int64_t r1, float* dst) { qwen35_gguf_rows(p, gen, r0, r1, dst); });
        TDM_TRY_CTX(w.add_tensor(p.gguf_name, uint32_t(t), p.ne, std::move(bytes)), path);
    }
    return w.write_file(path);
}

Status synth_qwen35_hf(const std::string& dir, const Qwen35Shape& s, const Qwen35SynthOptions& o) {
    TDM_TRY(validate_qwen35(s, o));
    if (!is_hf_weight_type(o.weight_type))
        return Error::format("qwen35 synth: HF checkpoints hold F32, F16 or BF16 weights; {} exists only as GGUF "
                             "(use synth_qwen35_gguf)",
                             dtype_name(o.weight_type));
    const Vocab vocab = TDM_TRY(qwen35_vocab(s.n_vocab));
    const Qwen35VocabLayout layout = TDM_TRY(qwen35_vocab_layout(s.n_vocab));
    const Qwen35Gen gen = make_gen(s, o, layout.n_text);

    TDM_TRY(make_directory(dir));
    TDM_TRY(write_text_file(dir + "/config.json", config_json(s, o, layout)));
    TDM_TRY(write_text_file(dir + "/tokenizer.json", tokenizer_json(vocab)));
    TDM_TRY(write_text_file(dir + "/tokenizer_config.json", tokenizer_config_json(vocab, s.n_ctx_train)));

    const Qwen35Table table = qwen35_table(s, o);
    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    const std::string dtype(safetensors_dtype_name(o.weight_type));
    const DType t = o.weight_type;
    for (const Qwen35HfTensor& h : table.hf) {
        // Produced while writing, one tensor at a time (the table outlives the writes below).
        TDM_TRY(st.add_tensor(h.name, dtype, h.shape, [&table, &gen, &h, t](uint8_t* dst) -> Status {
            for (const Qwen35HfSegment& seg : h.segments) {
                const Qwen35Param& p = table.params[seg.param];
                qwen35_encode_rows(seg.row1 - seg.row0, p.cols, t, gen.recipe.n_threads, dst,
                                   [&](int64_t r0, int64_t r1, float* out) {
                                       qwen35_hf_rows(p, gen, seg.row0 + r0, seg.row0 + r1, out);
                                   });
                dst += row_bytes(t, uint64_t(p.cols)) * uint64_t(seg.row1 - seg.row0);
            }
            return {};
        }));
    }
    if (o.hf_shard_bytes > 0) return st.write_sharded(dir, o.hf_shard_bytes);
    return st.write_file(dir + "/model.safetensors");
}

}  // namespace tdm::synth
