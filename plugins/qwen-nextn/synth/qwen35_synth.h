/* SPDX-License-Identifier: Apache-2.0 */
// plugins/qwen-nextn/synth/qwen35_synth.h: synthetic models of the Qwen3.5 / Qwen3.6 hybrid
// architecture (Gated DeltaNet + gated full attention, dense `qwen35` and MoE `qwen35moe`, optional
// built-in one-layer MTP head), written exactly in the layouts real files have: a GGUF as
// llama.cpp's convert_hf_to_gguf.py (+ llama-quantize) writes it, and a Hugging Face directory as
// the released checkpoints ship (config.json with a text_config, model.safetensors, tokenizer.json,
// tokenizer_config.json). Same model in both, value for value, with the converter's transforms
// applied to the GGUF only (docs/models/qwen35.md §3, docs/models/common.md §6):
//   * every RMSNorm weight except ssm_norm holds 1 + w in GGUF and w in HF (the "+1" convention);
//   * GDN value heads are in tiled order in GGUF (llama.cpp's grouped -> tiled reorder of
//     attn_qkv V rows, attn_gate, ssm_beta/alpha, ssm_a, ssm_dt.bias, ssm_conv1d V channels and
//     ssm_out input columns) and in grouped order in HF;
//   * ssm_a = -exp(A_log) (f32), ssm_conv1d {4, conv_dim} f32, dt_bias -> ssm_dt.bias;
//   * the MTP head is block blk.{n_layer} (nextn.* tensors) in GGUF and mtp.* in HF.
// Not here: the tokenizer (synth_vocab.h), the value generator (synth_weights.h), the parameter
// table (qwen35_params.h), the reference forward pass (tests/support/qwen35_reference.h).
//
//   Qwen35Shape shape = TDM_TRY(qwen35_preset("tiny-moe"));
//   Qwen35SynthOptions o;
//   o.weight_type = DType::Q8_0;
//   TDM_TRY(synth_qwen35_gguf(dir + "/tiny-moe-q8_0.gguf", shape, o));
//
// Values: element i of a parameter is a pure function of (seed, GGUF tensor name, i) as for
// qwen3_synth.h, always generated in the HF (grouped) order and then moved, so the two layouts
// are the same model. Matrices are uniform with std 1/sqrt(fan_in); the embedding/output std is
// 2/sqrt(n_embd). "+1" norm weights are 1 + u with u a multiple of 2^-10 in [-0.2, 0.2], exact in
// F32, F16 and BF16 both as u (HF) and as 1 + u (GGUF F32), so the two conventions give bit-equal
// weights. A_log is uniform in [0, 1.5] and dt_bias in [-2.5, 0.5], so exp(g) is typically
// 0.3..0.8 and the recurrent state carries a few tokens; conv weights have std 0.5. Each GDN key
// head's in_proj rows and conv taps are 0.8-correlated with its query head's, as in trained models,
// which keeps the untrained model from amplifying rounding (qwen35_params.cpp, kQkCorrelation).
#pragma once

#include "common/dtype.h"
#include "common/error.h"
#include "tokenizer/vocab.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tdm::synth {

struct Qwen35Shape {
    int32_t n_vocab = 0;                  // rows of token_embd / output
    int32_t n_embd = 0;                   // hidden_size
    int32_t n_layer = 0;                  // trunk layers (num_hidden_layers), the MTP layer excluded
    int32_t full_attention_interval = 4;  // layer il is full attention iff (il + 1) % interval == 0
    int32_t n_head = 0;                   // query heads of the full-attention layers
    int32_t n_head_kv = 0;
    int32_t head_dim = 0;                 // 256 in every released size
    int32_t n_rot = 0;                    // rotated dims (partial rotary; head_dim / 4 released)
    // Interleaved M-RoPE sections (t, h, w) in frequency slots; they sum to n_rot / 2. Released:
    // {11, 11, 10}. Text positions are t = h = w = p, so they only label the file.
    std::array<int32_t, 3> mrope_sections = {0, 0, 0};
    float rope_theta = 1e7f;
    int32_t n_ff = 0;                     // dense MLP width; 0 for MoE models
    // Gated DeltaNet (linear attention) layers.
    int32_t linear_n_k_heads = 0;         // Nk, linear_num_key_heads
    int32_t linear_n_v_heads = 0;         // Nv, linear_num_value_heads (a multiple of Nk)
    int32_t linear_d_k = 0;               // dk, linear_key_head_dim
    int32_t linear_d_v = 0;               // dv, linear_value_head_dim
    int32_t linear_conv_kernel = 4;
    // MoE (n_expert > 0 makes a qwen35moe model; every layer, the MTP layer included, is MoE).
    int32_t n_expert = 0;
    int32_t n_expert_used = 0;
    int32_t n_ff_exp = 0;                 // moe_intermediate_size
    int32_t n_ff_shexp = 0;               // shared_expert_intermediate_size
    int32_t n_ctx_train = 0;              // max_position_embeddings
    float rms_eps = 1e-6f;
    bool tied_embeddings = false;         // no output.weight / lm_head.weight
    bool mtp = true;                      // include the one-layer MTP head

    bool is_moe() const { return n_expert > 0; }
    bool is_full_attention(int32_t il) const { return (il + 1) % full_attention_interval == 0; }
    int64_t linear_key_dim() const { return int64_t(linear_n_k_heads) * linear_d_k; }
    int64_t linear_value_dim() const { return int64_t(linear_n_v_heads) * linear_d_v; }
    int64_t linear_conv_dim() const { return 2 * linear_key_dim() + linear_value_dim(); }
};

// "tiny" (dense, 4 layers: 3 GDN + 1 attention, Nv/Nk = 2, untied, MTP), "tiny-moe" (the same
// with 8 experts, 2 used, and a shared expert), "0.8b" (Qwen3.5-0.8B: hidden 1024, 24 layers,
// 8/2 heads of 256, n_ff 3584, Nk = Nv = 16, dk = dv = 128, vocab 248320, tied, MTP).
Result<Qwen35Shape> qwen35_preset(std::string_view name);
std::vector<std::string_view> qwen35_preset_names();

struct Qwen35SynthOptions {
    // Type of every matrix the converter may quantize (as qwen3: F32, F16, BF16, Q8_0, Q4_0,
    // Q4_K, Q5_K, Q6_K with llama-quantize's per-row fallback, gguf_row_type). Norms,
    // ssm_a, ssm_dt.bias, ssm_conv1d, ffn_gate_inp and ffn_gate_inp_shexp are always F32 in
    // GGUF, as the converter forces them. HF output takes only F32/F16/BF16; with F16/BF16 every
    // value is rounded through that type first, so the GGUF's F32 tensors equal the HF ones.
    DType weight_type = DType::F32;
    uint64_t seed = 1;
    std::optional<bool> tied;  // override of shape.tied_embeddings
    std::optional<bool> mtp;   // override of shape.mtp
    // "Repeating" model, as in qwen3_synth.h: attn_output, ssm_out, ffn_down (and the expert and
    // shared-expert down projections) are zero, so the residual stream is token_embd[t] and the
    // greedy successor of t is qwen35_repeat_successor(t). The MTP head is built to agree: its
    // nextn.eh_proj is [I | I/4] (embedding part passed through, the hidden part damped), its
    // residual outputs are zero too, so from (token t, any hidden) it drafts succ(t) - a draft
    // the trunk always accepts. Needs its own output matrix: tied is forced off.
    bool repeating = false;
    int32_t repeat_period = 5;
    std::string name;  // general.name; "" gives "tandem synthetic qwen35" (or qwen35moe)
    // HF output only: MoE layers of the trunk store their experts fused
    // (mlp.experts.gate_up_proj [E, 2I, H] gate first, mlp.experts.down_proj [E, H, I], no
    // ".weight" suffix) instead of per expert (mlp.experts.{e}.{gate,up,down}_proj.weight). The
    // MTP layer keeps per-expert tensors either way, as the released MoE checkpoints do.
    bool hf_fused_experts = false;
    uint64_t hf_shard_bytes = 0;  // > 0: sharded model-0000i-of-0000n.safetensors + index
    int n_threads = 0;            // 0 = hardware concurrency
};

// The vocabulary: synth_vocab.h's learned byte-level BPE with Qwen3.5's special tokens where
// the size allows (docs/models/qwen35.md §5): text ids [0, n_text), then <|endoftext|>, <|im_start|>,
// <|im_end|> (CONTROL), <think>, </think> (USER_DEFINED, as Qwen's tokenizer_config marks them
// not special), then [PAD<id>] up to n_vocab. Pre-tokenizer qwen35. bos = pad = <|endoftext|>,
// eos = <|im_end|>, no BOS added.
struct Qwen35VocabLayout {
    int32_t n_vocab = 0;
    int32_t n_text = 0;
    int32_t endoftext = 0, im_start = 0, im_end = 0, think = 0, think_end = 0;
};
Result<Qwen35VocabLayout> qwen35_vocab_layout(int32_t n_vocab);  // error below 261 ids
Result<Vocab> qwen35_vocab(int32_t n_vocab);

// Checks shape and options together; the synth functions call it first.
Status validate_qwen35(const Qwen35Shape& shape, const Qwen35SynthOptions& opts);

// The effective switches (shape default, then override, then repeating's constraint).
bool qwen35_is_tied(const Qwen35Shape& shape, const Qwen35SynthOptions& opts);
bool qwen35_has_mtp(const Qwen35Shape& shape, const Qwen35SynthOptions& opts);

// "qwen35" or "qwen35moe" (general.architecture).
std::string_view qwen35_arch(const Qwen35Shape& shape);

// GDN value-head order (docs/models/common.md §6). HF stores value head h grouped by key head (h uses key
// head h / r, r = Nv / Nk); llama.cpp's converter moves it to tiled position (h % r) * Nk + h / r,
// where it uses key head position % Nk. These map a head position in one order to the other.
int32_t qwen35_grouped_to_tiled(int32_t head, int32_t n_k_heads, int32_t n_v_heads);
int32_t qwen35_tiled_to_grouped(int32_t head, int32_t n_k_heads, int32_t n_v_heads);

// Repeating mode: the greedy successor of `token` (any id; always a text id), same rule as
// qwen3_repeat_successor over this model's text ids.
int32_t qwen35_repeat_successor(const Qwen35Shape& shape, const Qwen35SynthOptions& opts, int32_t token);

// Writes the GGUF (see the file comment; keys and tensors listed in qwen35_synth.cpp).
Status synth_qwen35_gguf(const std::string& path, const Qwen35Shape& shape, const Qwen35SynthOptions& opts);

// Writes the HF directory (created if missing). weight_type must be F32, F16 or BF16.
Status synth_qwen35_hf(const std::string& dir, const Qwen35Shape& shape, const Qwen35SynthOptions& opts);

}  // namespace tdm::synth
