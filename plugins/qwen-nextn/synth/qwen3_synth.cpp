// SPDX-License-Identifier: Apache-2.0
// plugins/qwen-nextn/synth/qwen3_synth.cpp: presets, option checks, and the two file layouts (GGUF
// as convert_hf_to_gguf.py + llama-quantize write Qwen3, HF as transformers saves Qwen3ForCausalLM)
// for the synthetic models described in qwen3_synth.h.
#include "qwen-nextn/synth/qwen3_synth.h"

#include "common/quant.h"
#include "qwen-nextn/synth/qwen3_params.h"
#include "synth/synth_files.h"
#include "synth/synth_vocab.h"
#include "synth/synth_weights.h"
#include "writers/gguf_writer.h"
#include "writers/safetensors_writer.h"
#include "writers/vocab_gguf_writer.h"

#include <nlohmann/json.hpp>

#include <cstdio>

namespace tdm::synth {
namespace {

struct Preset {
    std::string_view name;
    Qwen3Shape shape;
};

Qwen3Shape shape_of(int32_t n_vocab, int32_t n_embd, int32_t n_layer, int32_t n_head, int32_t n_head_kv,
                    int32_t head_dim, int32_t n_ff, int32_t n_ctx_train, bool tied) {
    Qwen3Shape s;
    s.n_vocab = n_vocab;
    s.n_embd = n_embd;
    s.n_layer = n_layer;
    s.n_head = n_head;
    s.n_head_kv = n_head_kv;
    s.head_dim = head_dim;
    s.n_ff = n_ff;
    s.n_ctx_train = n_ctx_train;
    s.tied_embeddings = tied;
    return s;
}

const std::vector<Preset>& presets() {
    static const std::vector<Preset> kPresets = {
        {"tiny", shape_of(512, 64, 2, 4, 2, 16, 128, 2048, false)},
        {"small", shape_of(4096, 256, 4, 8, 4, 32, 512, 4096, false)},
        // Qwen/Qwen3-0.6B config.json.
        {"0.6b", shape_of(151936, 1024, 28, 16, 8, 128, 3072, 40960, true)},
    };
    return kPresets;
}

std::string config_json(const Qwen3Shape& s, const Qwen3SynthOptions& o, const SynthVocabLayout& l) {
    nlohmann::ordered_json j;
    j["architectures"] = {"Qwen3ForCausalLM"};
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
    j["max_window_layers"] = s.n_layer;
    j["model_type"] = "qwen3";
    j["num_attention_heads"] = s.n_head;
    j["num_hidden_layers"] = s.n_layer;
    j["num_key_value_heads"] = s.n_head_kv;
    j["rms_norm_eps"] = json_number(s.rms_eps);
    j["rope_scaling"] = nullptr;
    j["rope_theta"] = json_number(s.rope_theta);
    j["sliding_window"] = nullptr;
    j["tie_word_embeddings"] = qwen3_is_tied(s, o);
    j["torch_dtype"] = torch_dtype_name(o.weight_type);
    j["transformers_version"] = "4.51.0";
    j["use_cache"] = true;
    j["use_sliding_window"] = false;
    j["vocab_size"] = s.n_vocab;
    return j.dump(2) + "\n";
}

}  // namespace

Result<Qwen3Shape> qwen3_preset(std::string_view name) {
    for (const Preset& p : presets())
        if (p.name == name) return p.shape;
    std::string known;
    for (const Preset& p : presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    return Error::format("unknown qwen3 preset '{}' (known: {})", name, known);
}

std::vector<std::string_view> qwen3_preset_names() {
    std::vector<std::string_view> names;
    for (const Preset& p : presets()) names.push_back(p.name);
    return names;
}

Result<Qwen3Shape> qwen3_draft_shape(const Qwen3Shape& target, int32_t n_layer) {
    if (n_layer < 1 || n_layer > target.n_layer)
        return Error::format("draft model: n_layer {} must be between 1 and the target's {}", n_layer, target.n_layer);
    Qwen3Shape s = target;
    s.n_layer = n_layer;
    return s;
}

Qwen3SynthOptions qwen3_draft_options(const Qwen3SynthOptions& target, float perturbation, uint64_t perturbation_seed) {
    Qwen3SynthOptions o = target;
    o.perturbation = perturbation;
    o.perturbation_seed = perturbation_seed;
    o.name = (target.name.empty() ? std::string("tandem synthetic qwen3") : target.name) + " draft";
    return o;
}

bool qwen3_is_tied(const Qwen3Shape& shape, const Qwen3SynthOptions& opts) {
    if (opts.repeating) return false;
    return opts.tied.value_or(shape.tied_embeddings);
}

Status validate_qwen3(const Qwen3Shape& s, const Qwen3SynthOptions& o) {
    auto positive = [](std::string_view field, int64_t v) -> Status {
        if (v <= 0) return Error::format("qwen3 shape: {} must be positive, got {}", field, v);
        return {};
    };
    TDM_TRY(positive("n_embd", s.n_embd));
    TDM_TRY(positive("n_layer", s.n_layer));
    TDM_TRY(positive("n_head", s.n_head));
    TDM_TRY(positive("n_head_kv", s.n_head_kv));
    TDM_TRY(positive("head_dim", s.head_dim));
    TDM_TRY(positive("n_ff", s.n_ff));
    TDM_TRY(positive("n_ctx_train", s.n_ctx_train));
    TDM_TRY(synth_vocab_layout(s.n_vocab));  // also the n_vocab check
    if (s.n_head % s.n_head_kv != 0)
        return Error::format("qwen3 shape: n_head {} is not a multiple of n_head_kv {}", s.n_head, s.n_head_kv);
    if (s.head_dim % 2 != 0)
        return Error::format("qwen3 shape: head_dim {} must be even (NeoX RoPE rotates pairs)", s.head_dim);
    if (!(s.rope_theta > 0.0f) || !std::isfinite(s.rope_theta))
        return Error::format("qwen3 shape: rope_theta must be positive, got {}", s.rope_theta);
    if (!(s.rms_eps > 0.0f) || !std::isfinite(s.rms_eps))
        return Error::format("qwen3 shape: rms_eps must be positive, got {}", s.rms_eps);

    if (!is_synth_weight_type(o.weight_type))
        return Error::format("qwen3 synth: weight type {} is not one of f32, f16, bf16, q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K",
                             ggml_type_name(uint32_t(o.weight_type)));
    if (o.repeating && o.tied.value_or(false))
        return Error("qwen3 synth: the repeating model needs its own output matrix; it cannot be tied");
    if (o.repeat_period < 1) return Error::format("qwen3 synth: repeat_period must be >= 1, got {}", o.repeat_period);
    if (!(o.perturbation >= 0.0f) || !std::isfinite(o.perturbation))
        return Error::format("qwen3 synth: perturbation must be a finite value >= 0, got {}", o.perturbation);
    if (!(o.residual_decay > 0.0f && o.residual_decay <= 1.0f))
        return Error::format("qwen3 synth: residual_decay must be in (0, 1], got {}", o.residual_decay);
    if (o.n_threads < 0) return Error::format("qwen3 synth: n_threads must be >= 0, got {}", o.n_threads);
    return {};
}

int32_t qwen3_repeat_successor(const Qwen3Shape& shape, const Qwen3SynthOptions& opts, int32_t token) {
    const Result<SynthVocabLayout> l = synth_vocab_layout(shape.n_vocab);
    TDM_ASSERT_MSG(l.ok() && token >= 0 && token < shape.n_vocab && opts.repeat_period >= 1,
                   "qwen3_repeat_successor: invalid shape, period or token");
    return repeat_successor(token % l->n_text, l->n_text, opts.repeat_period);
}

Status synth_qwen3_gguf(const std::string& path, const Qwen3Shape& s, const Qwen3SynthOptions& o) {
    TDM_TRY(validate_qwen3(s, o));
    const Vocab vocab = TDM_TRY(synth_vocab(s.n_vocab));
    const SynthVocabLayout layout = TDM_TRY(synth_vocab_layout(s.n_vocab));
    const WeightRecipe recipe = qwen3_recipe(o, layout.n_text);

    // Keys in the order convert_hf_to_gguf.py writes them for Qwen3.
    GgufWriter w;
    w.add_string("general.architecture", "qwen3");
    w.add_string("general.type", "model");
    w.add_string("general.name", o.name.empty() ? std::string("tandem synthetic qwen3") : o.name);
    w.add_u32("qwen3.block_count", uint32_t(s.n_layer));
    w.add_u32("qwen3.context_length", uint32_t(s.n_ctx_train));
    w.add_u32("qwen3.embedding_length", uint32_t(s.n_embd));
    w.add_u32("qwen3.feed_forward_length", uint32_t(s.n_ff));
    w.add_u32("qwen3.attention.head_count", uint32_t(s.n_head));
    w.add_u32("qwen3.attention.head_count_kv", uint32_t(s.n_head_kv));
    w.add_f32("qwen3.rope.freq_base", s.rope_theta);
    w.add_f32("qwen3.attention.layer_norm_rms_epsilon", s.rms_eps);
    w.add_u32("qwen3.attention.key_length", uint32_t(s.head_dim));
    w.add_u32("qwen3.attention.value_length", uint32_t(s.head_dim));
    w.add_u32("general.file_type", gguf_file_type(o.weight_type));
    TDM_TRY_CTX(write_vocab_gguf(vocab, w), path);
    w.add_string("tokenizer.chat_template", synth_chat_template());
    if (traits(o.weight_type).quantized) w.add_u32("general.quantization_version", kQuantizationVersion);

    for (const SynthParam& p : qwen3_params(s, qwen3_is_tied(s, o), o.residual_decay)) {
        // Norms stay F32 (the converter forces 1-D tensors to F32; llama-quantize skips them).
        const DType t = p.is_vector ? DType::F32 : gguf_row_type(o.weight_type, p.cols);
        std::vector<uint8_t> bytes(size_t(row_bytes(t, uint64_t(p.cols)) * uint64_t(p.rows)));
        encode_param(p, recipe, t, bytes.data());
        std::vector<int64_t> ne = p.is_vector ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.cols, p.rows};
        TDM_TRY_CTX(w.add_tensor(p.gguf_name, uint32_t(t), std::move(ne), std::move(bytes)), path);
    }
    return w.write_file(path);
}

Status synth_qwen3_hf(const std::string& dir, const Qwen3Shape& s, const Qwen3SynthOptions& o) {
    TDM_TRY(validate_qwen3(s, o));
    if (!is_hf_weight_type(o.weight_type))
        return Error::format("qwen3 synth: HF checkpoints hold F32, F16 or BF16 weights; {} exists only as GGUF "
                             "(use synth_qwen3_gguf)",
                             dtype_name(o.weight_type));
    const Vocab vocab = TDM_TRY(synth_vocab(s.n_vocab));
    const SynthVocabLayout layout = TDM_TRY(synth_vocab_layout(s.n_vocab));
    const WeightRecipe recipe = qwen3_recipe(o, layout.n_text);

    TDM_TRY(make_directory(dir));

    TDM_TRY(write_text_file(dir + "/config.json", config_json(s, o, layout)));
    TDM_TRY(write_text_file(dir + "/tokenizer.json", synth_tokenizer_json(vocab)));
    TDM_TRY(write_text_file(dir + "/tokenizer_config.json", synth_tokenizer_config_json(vocab, s.n_ctx_train)));

    // HF stores every tensor, norms included, in torch_dtype; the values were rounded through
    // it already (WeightRecipe::round_to), so the GGUF's F32 norms hold the same numbers.
    SafetensorsWriter st;
    st.add_metadata("format", "pt");
    const std::string dtype(safetensors_dtype_name(o.weight_type));
    for (const SynthParam& p : qwen3_params(s, qwen3_is_tied(s, o), o.residual_decay)) {
        std::vector<int64_t> shape = p.is_vector ? std::vector<int64_t>{p.cols} : std::vector<int64_t>{p.rows, p.cols};
        const DType t = o.weight_type;
        // Produced while writing, one tensor at a time, so a 0.6b checkpoint never sits in memory.
        TDM_TRY(st.add_tensor(p.hf_name, dtype, std::move(shape), [p, recipe, t](uint8_t* dst) -> Status {
            encode_param(p, recipe, t, dst);
            return {};
        }));
    }
    if (o.hf_shard_bytes > 0) return st.write_sharded(dir, o.hf_shard_bytes);
    return st.write_file(dir + "/model.safetensors");
}

}  // namespace tdm::synth
