// SPDX-License-Identifier: Apache-2.0
// plugins/glm-ocr/synth/glm_synth.cpp: presets, checks, the tensor table and the two file
// layouts of the synthetic GLM-OCR text decoders described in glm_synth.h.
#include "glm-ocr/synth/glm_synth.h"

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
#include <string_view>
#include <thread>
#include <tuple>

namespace tdm::synth {
namespace {

constexpr float kSqrt3 = 1.7320508075688772f;
constexpr float kNormSpread = 0.2f;

struct Preset {
    std::string_view name;
    GlmShape shape;
};

GlmShape shape_of(int32_t n_vocab, int32_t n_embd, int32_t n_layer, int32_t n_head, int32_t n_head_kv,
                  int32_t head_dim, int32_t n_ff, int32_t n_ctx, std::array<int32_t, 3> sections) {
    GlmShape s;
    s.n_vocab = n_vocab;
    s.n_embd = n_embd;
    s.n_layer = n_layer;
    s.n_head = n_head;
    s.n_head_kv = n_head_kv;
    s.head_dim = head_dim;
    s.n_ff = n_ff;
    s.n_ctx_train = n_ctx;
    s.sections = sections;
    return s;
}

const std::vector<Preset>& presets() {
    static const std::vector<Preset> kPresets = {
        {"tiny", shape_of(512, 64, 2, 4, 2, 32, 96, 4096, {4, 6, 6})},
        {"small", shape_of(4096, 256, 4, 8, 4, 64, 512, 8192, {8, 12, 12})},
        // zai-org/GLM-OCR config.json, text_config (docs/models/glm-ocr.md §1)
        {"glm-ocr", shape_of(59392, 1536, 16, 16, 8, 128, 4608, 131072, {16, 24, 24})},
    };
    return kPresets;
}

// One tensor of the file: its names in both layouts and the parameter whose values it holds.
struct GlmTensor {
    std::string gguf, hf;
    SynthParam p;               // values (p.gguf_name names the value stream)
    bool neox_rows = false;     // q/k: GGUF rows in NeoX order
    bool eh_identity = false;   // MTP eh_proj: [I | I/4] in repeating mode
    bool bias = false;          // a q/k/v bias: 1-D, F32 in GGUF; with neox_rows its elements move
};

SynthParam text_param(std::string stream, int64_t rows, int64_t cols, ParamRole role, float sigma) {
    SynthParam p;
    p.gguf_name = std::move(stream);
    p.rows = rows;
    p.cols = cols;
    p.is_vector = role == ParamRole::norm;
    p.role = role;
    p.sigma = sigma;
    return p;
}

void add(std::vector<GlmTensor>& t, std::string gguf, std::string hf, SynthParam p) {
    GlmTensor x;
    x.gguf = std::move(gguf);
    x.hf = std::move(hf);
    x.p = std::move(p);
    t.push_back(std::move(x));
}

// A sandwich block's tensors under the given prefixes ("blk.3.", "model.language_model.layers.3."),
// with GLM-4-0414's q/k/v biases when `bias`.
void add_block(std::vector<GlmTensor>& t, const GlmShape& s, const std::string& g, const std::string& h, bool bias) {
    const float sd_embd = 1.0f / std::sqrt(float(s.n_embd));
    const float sd_o = 1.0f / std::sqrt(float(s.n_head * s.head_dim));
    const float sd_ff = 1.0f / std::sqrt(float(s.n_ff));
    const float sd_norm = kNormSpread / kSqrt3;
    const int64_t E = s.n_embd, q_rows = int64_t(s.n_head) * s.head_dim, kv_rows = int64_t(s.n_head_kv) * s.head_dim;
    auto tensor = [&](const char* gn, const char* hn, int64_t rows, int64_t cols, ParamRole role, float sigma) {
        add(t, g + gn, h + hn, text_param(g + gn, rows, cols, role, sigma));
    };
    tensor("attn_norm.weight", "input_layernorm.weight", 1, E, ParamRole::norm, sd_norm);
    tensor("attn_q.weight", "self_attn.q_proj.weight", q_rows, E, ParamRole::matrix, sd_embd);
    t.back().neox_rows = true;
    tensor("attn_k.weight", "self_attn.k_proj.weight", kv_rows, E, ParamRole::matrix, sd_embd);
    t.back().neox_rows = true;
    tensor("attn_v.weight", "self_attn.v_proj.weight", kv_rows, E, ParamRole::matrix, sd_embd);
    if (bias) {  // values of std 0.5: large enough that a dropped bias changes the logits
        for (const auto& [gn, hn, rows] : {std::tuple{"attn_q.bias", "self_attn.q_proj.bias", q_rows},
                                           std::tuple{"attn_k.bias", "self_attn.k_proj.bias", kv_rows},
                                           std::tuple{"attn_v.bias", "self_attn.v_proj.bias", kv_rows}}) {
            tensor(gn, hn, 1, rows, ParamRole::matrix, 0.5f);
            t.back().bias = true;
            t.back().neox_rows = std::string_view(gn) != "attn_v.bias";
        }
    }
    tensor("attn_output.weight", "self_attn.o_proj.weight", E, q_rows, ParamRole::residual_out, sd_o);
    tensor("post_attention_norm.weight", "post_self_attn_layernorm.weight", 1, E, ParamRole::norm, sd_norm);
    tensor("ffn_norm.weight", "post_attention_layernorm.weight", 1, E, ParamRole::norm, sd_norm);
    tensor("ffn_up.weight", "mlp.gate_up_proj.weight", 2 * int64_t(s.n_ff), E, ParamRole::matrix, sd_embd);
    tensor("ffn_down.weight", "mlp.down_proj.weight", E, s.n_ff, ParamRole::residual_out, sd_ff);
    tensor("post_ffw_norm.weight", "post_mlp_layernorm.weight", 1, E, ParamRole::norm, sd_norm);
}

// In GGUF file order: token_embd, the trunk's blocks, the MTP block, output_norm, output.
std::vector<GlmTensor> table(const GlmShape& s, const GlmSynthOptions& o) {
    const float sd_embd = 1.0f / std::sqrt(float(s.n_embd));
    const float sd_norm = kNormSpread / kSqrt3;
    const int64_t E = s.n_embd, V = s.n_vocab;
    const SynthParam embd = text_param("token_embd.weight", V, E, ParamRole::token_embd, 2.0f * sd_embd);
    const SynthParam out = text_param("output.weight", V, E, ParamRole::output, 2.0f * sd_embd);
    std::vector<GlmTensor> t;
    add(t, "token_embd.weight", "model.language_model.embed_tokens.weight", embd);
    const int32_t n_block = s.n_layer + (s.mtp ? 1 : 0);
    for (int32_t il = 0; il < n_block; ++il) {
        const std::string g = "blk." + std::to_string(il) + ".";
        const std::string h = "model.language_model.layers." + std::to_string(il) + ".";
        if (il == s.n_layer) {  // the MTP layer: its own tensors, then an ordinary block
            add(t, g + "nextn.eh_proj.weight", h + "eh_proj.weight",
                text_param(g + "nextn.eh_proj.weight", E, 2 * E, ParamRole::matrix, 1.0f / std::sqrt(float(2 * E))));
            t.back().eh_identity = true;
            add(t, g + "nextn.enorm.weight", h + "enorm.weight",
                text_param(g + "nextn.enorm.weight", 1, E, ParamRole::norm, sd_norm));
            add(t, g + "nextn.hnorm.weight", h + "hnorm.weight",
                text_param(g + "nextn.hnorm.weight", 1, E, ParamRole::norm, sd_norm));
            if (o.mtp_copies) {
                SynthParam own_embd = embd, own_out = out;
                if (!o.repeating) {  // repeating mode needs the trunk's codes to draft its successors
                    own_embd.gguf_name = g + "nextn.embed_tokens.weight";
                    own_out.gguf_name = g + "nextn.shared_head_head.weight";
                }
                add(t, g + "nextn.embed_tokens.weight", h + "embed_tokens.weight", own_embd);
                add(t, g + "nextn.shared_head_head.weight", h + "shared_head.head.weight", own_out);
            }
            add(t, g + "nextn.shared_head_norm.weight", h + "shared_head.norm.weight",
                text_param(g + "nextn.shared_head_norm.weight", 1, E, ParamRole::norm, sd_norm));
        }
        add_block(t, s, g, h, o.attn_bias);
    }
    add(t, "output_norm.weight", "model.language_model.norm.weight",
        text_param("output_norm.weight", 1, E, ParamRole::norm, sd_norm));
    add(t, "output.weight", "lm_head.weight", out);
    return t;
}

WeightRecipe recipe_of(const GlmSynthOptions& o, int32_t n_text) {
    WeightRecipe r;
    r.seed = o.seed;
    r.repeating = o.repeating;
    r.repeat_period = o.repeat_period;
    r.n_text = n_text;
    r.round_to = (o.weight_type == DType::F16 || o.weight_type == DType::BF16) ? o.weight_type : DType::F32;
    r.n_threads = o.n_threads > 0 ? o.n_threads : int(std::max(1u, std::thread::hardware_concurrency()));
    return r;
}

// The tensor's values, row-major [rows][cols], rows in GGUF order when gguf is set.
std::vector<float> values(const GlmTensor& t, const WeightRecipe& r, int64_t head_dim, bool gguf) {
    const SynthParam& p = t.p;
    std::vector<float> v(size_t(p.rows * p.cols), 0.0f);
    if (t.eh_identity && r.repeating) {
        const int64_t E = p.rows;
        for (int64_t i = 0; i < E; ++i) {
            v[size_t(i * p.cols + i)] = 1.0f;
            v[size_t(i * p.cols + E + i)] = 0.25f;
        }
    } else {
        fill_rows(p, r, 0, p.rows, v.data());
    }
    if (gguf && t.neox_rows && t.bias) {  // one element per q/k row: moved as the rows are
        std::vector<float> perm(v.size());
        for (int64_t i = 0; i < p.cols; ++i) perm[size_t(glm_neox_row(i, head_dim))] = v[size_t(i)];
        v.swap(perm);
    } else if (gguf && t.neox_rows) {
        std::vector<float> perm(v.size());
        for (int64_t row = 0; row < p.rows; ++row)
            std::copy_n(v.begin() + row * p.cols, p.cols, perm.begin() + glm_neox_row(row, head_dim) * p.cols);
        v.swap(perm);
    }
    return v;
}

std::string config_json(const GlmShape& s, const GlmSynthOptions& o, const SynthVocabLayout& l,
                        const GlmImageTokens* image) {
    nlohmann::ordered_json text;
    text["model_type"] = "glm_ocr_text";
    text["attention_bias"] = o.attn_bias;
    text["eos_token_id"] = {l.endoftext, l.im_end};
    text["head_dim"] = s.head_dim;
    text["hidden_act"] = "silu";
    text["hidden_size"] = s.n_embd;
    text["intermediate_size"] = s.n_ff;
    text["max_position_embeddings"] = s.n_ctx_train;
    text["num_attention_heads"] = s.n_head;
    text["num_hidden_layers"] = s.n_layer;
    text["num_key_value_heads"] = s.n_head_kv;
    text["num_nextn_predict_layers"] = s.mtp ? 1 : 0;
    text["pad_token_id"] = l.endoftext;
    text["rms_norm_eps"] = json_number(s.rms_eps);
    text["rope_parameters"] = {{"rope_type", "default"},
                               {"rope_theta", json_number(s.rope_theta)},
                               {"partial_rotary_factor", 1.0},
                               {"mrope_section", {s.sections[0], s.sections[1], s.sections[2]}}};
    text["tie_word_embeddings"] = false;
    text["vocab_size"] = s.n_vocab;
    nlohmann::ordered_json j;
    j["architectures"] = {"GlmOcrForConditionalGeneration"};
    j["model_type"] = "glm_ocr";
    j["text_config"] = text;
    if (image) {
        j["vision_config"] = glm_vision_config_json(s.vision, s.n_embd);
        j["image_start_token_id"] = image->begin;
        j["image_token_id"] = image->image;
        j["image_end_token_id"] = image->end;
    }
    j["tie_word_embeddings"] = false;
    j["torch_dtype"] = torch_dtype_name(o.weight_type);
    j["transformers_version"] = "5.0.0";
    return j.dump(2) + "\n";
}

}  // namespace

Result<GlmShape> glm_preset(std::string_view name) {
    for (const Preset& p : presets())
        if (p.name == name) return p.shape;
    std::string known;
    for (const Preset& p : presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    return Error::format("unknown glm4 preset '{}' (known: {})", name, known);
}

std::vector<std::string_view> glm_preset_names() {
    std::vector<std::string_view> names;
    for (const Preset& p : presets()) names.push_back(p.name);
    return names;
}

Status validate_glm(const GlmShape& s, const GlmSynthOptions& o) {
    for (auto [field, v] : {std::pair<const char*, int64_t>{"n_embd", s.n_embd}, {"n_layer", s.n_layer},
                            {"n_head", s.n_head}, {"n_head_kv", s.n_head_kv}, {"head_dim", s.head_dim},
                            {"n_ff", s.n_ff}, {"n_ctx_train", s.n_ctx_train}})
        if (v <= 0) return Error::format("glm4 shape: {} must be positive, got {}", field, v);
    TDM_TRY(synth_vocab_layout(s.n_vocab));
    if (s.n_head % s.n_head_kv != 0)
        return Error::format("glm4 shape: n_head {} is not a multiple of n_head_kv {}", s.n_head, s.n_head_kv);
    if (s.head_dim % 4 != 0) return Error::format("glm4 shape: head_dim {} must be a multiple of 4", s.head_dim);
    if (s.sections[0] < 0 || s.sections[1] < 0 || s.sections[2] < 0 ||
        s.sections[0] + s.sections[1] + s.sections[2] != s.head_dim / 2)
        return Error::format("glm4 shape: M-RoPE sections [{}, {}, {}] must cover head_dim / 2 = {} slots",
                             s.sections[0], s.sections[1], s.sections[2], s.head_dim / 2);
    if (!is_synth_weight_type(o.weight_type))
        return Error::format("glm4 synth: weight type {} is not one of f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, "
                             "q5_K, q6_K",
                             ggml_type_name(uint32_t(o.weight_type)));
    if (o.repeat_period < 1) return Error::format("glm4 synth: repeat_period must be >= 1, got {}", o.repeat_period);
    if (o.n_threads < 0) return Error::format("glm4 synth: n_threads must be >= 0, got {}", o.n_threads);
    if (s.vision.depth > 0) {
        TDM_TRY(validate_glm_vision(s.vision, s.n_embd));
        TDM_TRY(synth_vocab_layout(s.n_vocab - 3));
        if (o.repeating) return Error("glm4 synth: a repeating model has no vision tower (--repeating with --vision)");
    }
    return {};
}

int64_t glm_neox_row(int64_t hf_row, int64_t head_dim) {
    const int64_t head = hf_row / head_dim, j = hf_row % head_dim;
    const int64_t neox = j % 2 == 0 ? j / 2 : head_dim / 2 + j / 2;
    return head * head_dim + neox;
}

int32_t glm_repeat_successor(const GlmShape& shape, const GlmSynthOptions& opts, int32_t token) {
    const Result<SynthVocabLayout> l = synth_vocab_layout(shape.n_vocab);
    TDM_ASSERT_MSG(l.ok() && token >= 0 && token < shape.n_vocab, "glm_repeat_successor: invalid shape or token");
    return repeat_successor(token % l->n_text, l->n_text, opts.repeat_period);
}

Status synth_glm_gguf(const std::string& path, const GlmShape& s, const GlmSynthOptions& o) {
    TDM_TRY(validate_glm(s, o));
    // With a vision tower the vocabulary ends with the image tokens (as the HF layout's) and the
    // tower goes to llama.cpp's separate mmproj file beside the model.
    const bool vision = s.vision.depth > 0;
    GlmImageTokens image;
    const Vocab vocab = vision ? TDM_TRY(glm_vision_vocab(s.n_vocab, &image)) : TDM_TRY(synth_vocab(s.n_vocab));
    const SynthVocabLayout layout = TDM_TRY(synth_vocab_layout(s.n_vocab - (vision ? 3 : 0)));
    const WeightRecipe recipe = recipe_of(o, layout.n_text);
    if (vision) TDM_TRY(write_glm_mmproj(glm_mmproj_path(path), s.vision, s.n_embd, recipe));

    // Keys as llama.cpp's converter writes them for GLM-OCR (GlmOCRModel).
    GgufWriter w;
    w.add_string("general.architecture", "glm4");
    w.add_string("general.type", "model");
    w.add_string("general.name", o.name.empty() ? std::string("tandem synthetic glm-ocr") : o.name);
    w.add_u32("glm4.block_count", uint32_t(s.n_layer + (s.mtp ? 1 : 0)));
    w.add_u32("glm4.context_length", uint32_t(s.n_ctx_train));
    w.add_u32("glm4.embedding_length", uint32_t(s.n_embd));
    w.add_u32("glm4.feed_forward_length", uint32_t(s.n_ff));
    w.add_u32("glm4.attention.head_count", uint32_t(s.n_head));
    w.add_u32("glm4.attention.head_count_kv", uint32_t(s.n_head_kv));
    w.add_u32("glm4.attention.key_length", uint32_t(s.head_dim));
    w.add_u32("glm4.attention.value_length", uint32_t(s.head_dim));
    w.add_f32("glm4.rope.freq_base", s.rope_theta);
    w.add_u32("glm4.rope.dimension_count", uint32_t(s.head_dim));
    w.add_array("glm4.rope.dimension_sections", std::vector<int32_t>{s.sections[0], s.sections[1], s.sections[2], 0});
    w.add_f32("glm4.attention.layer_norm_rms_epsilon", s.rms_eps);
    if (s.mtp) w.add_u32("glm4.nextn_predict_layers", 1);
    w.add_u32("general.file_type", gguf_file_type(o.weight_type));
    TDM_TRY_CTX(write_vocab_gguf(vocab, w), path);
    w.add_string("tokenizer.chat_template", synth_chat_template());
    if (traits(o.weight_type).quantized) w.add_u32("general.quantization_version", kQuantizationVersion);

    for (const GlmTensor& t : table(s, o)) {
        const SynthParam& p = t.p;
        const bool vector = p.is_vector || t.bias;
        const DType type = vector ? DType::F32 : gguf_row_type(o.weight_type, p.cols);
        const std::vector<float> v = values(t, recipe, s.head_dim, true);
        std::vector<int64_t> ne = vector ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.cols, p.rows};
        TDM_TRY_CTX(w.add_tensor(t.gguf, uint32_t(type), std::move(ne), quantize_matrix(type, v.data(), p.rows, p.cols)),
                    path);
    }
    return w.write_file(path);
}

Status synth_glm_hf(const std::string& dir, const GlmShape& s, const GlmSynthOptions& o) {
    TDM_TRY(validate_glm(s, o));
    if (!is_hf_weight_type(o.weight_type))
        return Error::format("glm4 synth: HF checkpoints hold F32, F16 or BF16 weights; {} exists only as GGUF",
                             dtype_name(o.weight_type));
    const bool vision = s.vision.depth > 0;
    GlmImageTokens image;
    // With a vision tower the last three ids are the image tokens: the text vocabulary is
    // three ids smaller.
    const Vocab vocab = vision ? TDM_TRY(glm_vision_vocab(s.n_vocab, &image)) : TDM_TRY(synth_vocab(s.n_vocab));
    const SynthVocabLayout layout = TDM_TRY(synth_vocab_layout(s.n_vocab - (vision ? 3 : 0)));
    const WeightRecipe recipe = recipe_of(o, layout.n_text);
    TDM_TRY(make_directory(dir));
    TDM_TRY(write_text_file(dir + "/config.json", config_json(s, o, layout, vision ? &image : nullptr)));
    if (vision) TDM_TRY(write_text_file(dir + "/preprocessor_config.json", glm_preprocessor_config_json(s.vision)));
    TDM_TRY(write_text_file(dir + "/tokenizer.json", synth_tokenizer_json(vocab)));
    TDM_TRY(write_text_file(dir + "/tokenizer_config.json", synth_tokenizer_config_json(vocab, s.n_ctx_train)));
    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    const std::string dtype(safetensors_dtype_name(o.weight_type));
    const DType type = o.weight_type;
    const int64_t head_dim = s.head_dim;
    for (const GlmTensor& t : table(s, o)) {
        std::vector<int64_t> shape = t.p.is_vector || t.bias ? std::vector<int64_t>{t.p.cols}
                                                             : std::vector<int64_t>{t.p.rows, t.p.cols};
        // produced while writing, one tensor at a time
        TDM_TRY(st.add_tensor(t.hf, dtype, std::move(shape), [t, recipe, type, head_dim](uint8_t* dst) -> Status {
            const std::vector<float> v = values(t, recipe, head_dim, false);
            const std::vector<uint8_t> bytes = quantize_matrix(type, v.data(), t.p.rows, t.p.cols);
            std::copy(bytes.begin(), bytes.end(), dst);
            return {};
        }));
    }
    if (vision)
        for (GlmVisionTensor& t : glm_vision_tensors(s.vision, s.n_embd)) {
            const SynthParam p = t.p;
            TDM_TRY(st.add_tensor(p.hf_name, dtype, std::move(t.shape), [p, recipe, type](uint8_t* dst) -> Status {
                std::vector<float> v(size_t(p.rows * p.cols));
                fill_rows(p, recipe, 0, p.rows, v.data());
                const std::vector<uint8_t> bytes = quantize_matrix(type, v.data(), p.rows, p.cols);
                std::copy(bytes.begin(), bytes.end(), dst);
                return {};
            }));
        }
    return st.write_file(dir + "/model.safetensors");
}

}  // namespace tdm::synth
