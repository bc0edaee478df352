// SPDX-License-Identifier: Apache-2.0
// tests/support/gemma4_assistant_reference.h: an independent plain C++ reference of the Gemma 4
// assistant drafter (model_type gemma4_assistant / GGUF arch gemma4-assistant), written from
// docs/models/gemma4.md §3 (never from GPU or plugin code). It reads the drafter's GGUF file or HF
// directory through ModelSource and drafts against a Gemma4Reference target and its Gemma4Cache,
// composing the double-accumulating ops of reference.h. Tests check the runtime's drafter
// (tokens and per-step logits) against it on synthetic models.
// Not here: the target forward (gemma4_reference.h), verification / acceptance, sampling other
// than greedy, EOS handling (the round always drafts k tokens).
//
//   auto target = TDM_TRY(Gemma4Reference::open(target_path));
//   auto drafter = TDM_TRY(Gemma4AssistantReference::open(assistant_path, target));
//   Gemma4Cache cache; Gemma4Output out = target.run(prompt, &cache);   // positions 0..p-1
//   // tok = x_p, produced by the last hidden row (not yet in the cache):
//   std::vector<int32_t> d = drafter.draft(target, cache, last_row(out.hidden), tok, p, k);
//
// One draft step (spec §3.3; Hb = target hidden, Ha = drafter hidden, p constant in a round):
//   e  = target.embed(tok)                      target table * sqrt(Hb), the target's scale rule
//   x  = pre_projection(concat[e, hb])          [2*Hb] -> [Ha], embedding first
//   per layer i (S, S, S, F):
//     a = norm(x, attn_norm); q = rope_type(i)(norm_per_head(a Wq^T, q_norm), p)
//     K, V = target cache of target.shared_kv_layer(type(i)), positions [lo, p):
//            full lo = 0, sliding lo = max(0, p - W) (the last W committed positions)
//     x = x + norm(attention(q, K, V; scale 1, GQA over the target's KV heads) Wo^T, post_attention_norm)
//     x = x + norm(GeGLU(norm(x, ffn_norm)), post_ffw_norm)
//     x = x * layer_output_scale
//   hn = norm(x, output_norm); hb' = post_projection(hn) [Hb] (the next step's hb)
//   logits = head(hn) (then softcap when the file sets final_logit_softcapping and
//            Gemma4AssistantOptions::apply_softcap; HF applies none, vLLM does)
//   full head:    logits = hn E_a^T over the drafter's own token_embd (tied)
//   ordered head: c = hn C^T [n_centroids]; top = top_k(c, centroid_intermediate_top_k) (largest
//                 first, lower index on ties); cand = ordering rows of top, in that order;
//                 logits[cand] = hn E_a[cand]^T, every other id min(logits[cand]) - 1;
//                 the token is the first candidate (in candidate order) with the largest logit.
#pragma once

#include "common/error.h"
#include "formats/model_source.h"
#include "support/gemma4_reference.h"
#include "support/reference.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace tdm::ref {

struct Gemma4AssistantHparams {
    int64_t n_vocab = 0;          // rows of the drafter's token_embd (= the target's vocabulary)
    int64_t n_embd = 0;           // Ha
    int64_t n_embd_backbone = 0;  // Hb (embedding_length_out / backbone_hidden_size)
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t head_dim_swa = 0, head_dim_full = 0;
    std::vector<bool> sliding;       // per layer
    std::vector<int64_t> n_head_kv;  // per layer, as the file states it (must equal the target's)
    int64_t n_ff = 0;
    int64_t window = 0;
    double rope_theta_swa = 0.0, rope_theta_full = 0.0;
    int64_t n_rot_full = 0;       // rotated frequency slots of full layers
    float rms_eps = 0.0f;
    float softcap = 0.0f;         // final_logit_softcapping; 0 = none
    bool ordered = false;         // use_ordered_embeddings (centroid-masked head)
    int64_t n_centroids = 0, n_centroids_top_k = 0;
};

struct Gemma4AssistantOptions {
    // Apply final_logit_softcapping to the draft logits when the file sets it (vLLM); false
    // follows HF, which never softcaps the drafter. Tokens are the same either way.
    bool apply_softcap = true;
};

// One draft step's results.
struct Gemma4AssistantStep {
    Floats logits;      // [n_vocab] (ordered head: non-candidates at min(candidates) - 1)
    Floats hidden;      // [Hb] post_projection(hn): the next step's hb
    int32_t token = 0;  // greedy choice
};

// The head's output for one post-norm row.
struct Gemma4AssistantHead {
    Floats logits;                    // [n_vocab], as in Gemma4AssistantStep
    std::vector<int32_t> candidates;  // ordered head: the candidate ids in order; empty otherwise
    int32_t token = 0;
};

class Gemma4AssistantReference {
public:
    // Errors (each naming the file, and both values where the drafter disagrees with the
    // target): not gemma4-assistant / gemma4_assistant, missing keys or tensors, shapes that do
    // not match the hyper-parameters, nextn_predict_layers != block_count, an HF text_config
    // with per-layer inputs, MoE or a double-wide MLP, a vocabulary not divisible into the
    // centroids; against the target: backbone hidden size != target hidden size, vocabulary,
    // head dims, KV heads of a layer type, sliding window, RoPE bases or rotated slots that
    // differ, or a layer type the target has no own-KV layer for.
    static Result<Gemma4AssistantReference> open(const std::string& path, const Gemma4Reference& target,
                                                 Gemma4AssistantOptions opts = {});
    static Result<Gemma4AssistantReference> load(std::unique_ptr<ModelSource> src, const Gemma4Reference& target,
                                                 Gemma4AssistantOptions opts = {});

    const Gemma4AssistantHparams& hparams() const { return hp_; }

    // One drafting round (spec §3.5, HF position convention): k greedy tokens from
    // (tok = x_p, h_prev = target post-norm hidden [Hb] of position p - 1, the row that produced
    // tok), all at query position p, attending over target_cache positions < p only (entries at
    // p or later are ignored). Needs 0 <= p <= target_cache.n_past and tok in range (asserted).
    // step_logits, if given, receives the k logit rows.
    std::vector<int32_t> draft(const Gemma4Reference& target, const Gemma4Cache& target_cache,
                               std::span<const float> h_prev, int32_t tok, int64_t p, int k,
                               std::vector<Floats>* step_logits = nullptr) const;

    // One step of the round: draft() is k of these, feeding hidden and token back.
    Gemma4AssistantStep step(const Gemma4Reference& target, const Gemma4Cache& target_cache,
                             std::span<const float> hb, int32_t tok, int64_t p) const;

    // The LM head on one post-norm drafter row hn [Ha] (before any softcap).
    Gemma4AssistantHead head(std::span<const float> hn) const;

private:
    struct Matrix {
        DType type = DType::F32;
        std::span<const uint8_t> bytes;  // in the source's mapping
        int64_t rows = 0, cols = 0;
    };
    struct Layer {
        Floats attn_norm, post_attention_norm;  // [Ha]
        Floats q_norm;                          // [D]
        Matrix wq, wo;                          // [n_head*D][Ha], [Ha][n_head*D]
        Floats ffn_norm, post_ffw_norm;         // [Ha]
        Matrix gate, up, down;                  // [n_ff][Ha] x2, [Ha][n_ff]
        float out_scale = 1.0f;                 // layer_output_scale
    };

    Gemma4AssistantReference() = default;
    Status check_target(const Gemma4Reference& target) const;
    static Floats mm(std::span<const float> x, const Matrix& m);

    std::unique_ptr<ModelSource> src_;
    Gemma4AssistantOptions opts_;
    Gemma4AssistantHparams hp_;
    Matrix tok_embd_;            // [n_vocab][Ha], the tied head
    Floats output_norm_;         // [Ha]
    Matrix pre_proj_;            // [Ha][2*Hb]
    Matrix post_proj_;           // [Hb][Ha]
    Floats rope_factors_;        // [head_dim_full / 2] frequency divisors of the full layer
    Matrix centroids_;           // [n_centroids][Ha] (ordered head)
    std::vector<int32_t> ordering_;  // [n_vocab] token ids, [n_centroids][n_vocab / n_centroids]
    std::vector<Layer> layers_;
};

}  // namespace tdm::ref
