/* SPDX-License-Identifier: Apache-2.0 */
// plugins/qwen-nextn/synth/qwen35_params.h: the parameter table of a synthetic Qwen3.5 model and
// the row generator that gives each parameter's values in either layout. A parameter is one GGUF
// tensor; its values are defined in HF (grouped, "+1"-free, A_log) form and the GGUF rows are
// derived from them by the converter's transforms. HF tensors are lists of parameter row ranges (a
// per-expert HF tensor is a slice of a GGUF 3-D tensor, a fused gate_up_proj interleaves two).
// Not here: file metadata and writing (qwen35_synth.cpp).
#pragma once

#include "common/dtype.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "synth/synth_weights.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace tdm::synth {

enum class Q35Recipe {
    embed,         // token_embd (repeating: +-1 codes)
    output,        // output (repeating: scaled codes of the predecessor)
    matrix,        // uniform, std sigma
    residual_out,  // like matrix; zero in repeating mode
    norm_one_plus, // HF u (2^-10 grid, |u| <= 0.2); GGUF 1 + u
    norm_plain,    // ssm_norm: 1 + u in both layouts
    a_log,         // HF A_log uniform in [0, 1.5]; GGUF ssm_a = -exp(A_log) (float)
    dt_bias,       // uniform in [-2.5, 0.5]
    mtp_fc,        // nextn.eh_proj: matrix; repeating: [I | I/4]
};

// Grouped -> tiled V-head move applied to GGUF (none, over rows, or over columns). The heads
// are head_dim wide and start at `offset` (attn_qkv and ssm_conv1d: after q and k).
enum class Q35Perm { none, rows, cols };

struct Qwen35Param {
    std::string gguf_name;     // "blk.0.attn_qkv.weight", "blk.0.ssm_a"
    std::vector<int64_t> ne;   // GGUF ne (ggml order)
    int64_t rows = 1;          // logical row-major view: rows x cols, cols = ne[0]
    int64_t cols = 0;
    Q35Recipe recipe = Q35Recipe::matrix;
    float sigma = 0.0f;
    bool force_f32 = false;    // the converter writes it F32 whatever --outtype says
    Q35Perm perm = Q35Perm::none;
    int64_t perm_offset = 0;
    int64_t perm_head_dim = 1;
    // GDN attn_qkv and ssm_conv1d: rows [qk_rows, 2 qk_rows) (k) are mixed with the q rows
    // qk_rows above them, k = c q + sqrt(1 - c^2) k', c = kQkCorrelation (see the .cpp for why).
    int64_t qk_rows = 0;
};

struct Qwen35HfSegment {
    size_t param = 0;  // index into the parameter table
    int64_t row0 = 0, row1 = 0;
};

struct Qwen35HfTensor {
    std::string name;            // "model.language_model.layers.0.linear_attn.in_proj_qkv.weight"
    std::vector<int64_t> shape;  // HF order
    std::vector<Qwen35HfSegment> segments;  // rows, in order; each row has params[..].cols values
};

struct Qwen35Table {
    // In GGUF file order: token_embd, blk.0 .. blk.{n_layer-1}, the MTP block blk.{n_layer},
    // output_norm, output (untied only).
    std::vector<Qwen35Param> params;
    // In the order transformers lists them (model.language_model.*, lm_head, mtp.*); the
    // safetensors writer orders the file itself.
    std::vector<Qwen35HfTensor> hf;
};

// The shape and options must have passed validate_qwen35.
Qwen35Table qwen35_table(const Qwen35Shape& s, const Qwen35SynthOptions& o);

struct Qwen35Gen {
    const Qwen35Shape* shape = nullptr;
    WeightRecipe recipe;  // seed, repeating, n_text, round_to (the HF dtype), threads
};

// HF values of logical rows [r0, r1) of p (grouped order, HF convention, rounded through the HF
// dtype): (r1 - r0) * cols floats.
void qwen35_hf_rows(const Qwen35Param& p, const Qwen35Gen& g, int64_t r0, int64_t r1, float* dst);
// GGUF values of rows [r0, r1) (tiled order, +1 baked, -exp(A_log)).
void qwen35_gguf_rows(const Qwen35Param& p, const Qwen35Gen& g, int64_t r0, int64_t r1, float* dst);

// The GGUF type of p for the requested weight type.
DType qwen35_gguf_type(const Qwen35Param& p, DType weight_type);

// Fills rows [r0, r1) of some row-major float matrix into dst.
using Qwen35RowFn = std::function<void(int64_t r0, int64_t r1, float* dst)>;

// Encodes rows [0, rows) of `fill` as type t into dst (row_bytes(t, cols) per row), in batches
// of rows split over n_threads threads; the result does not depend on the thread count.
void qwen35_encode_rows(int64_t rows, int64_t cols, DType t, int n_threads, uint8_t* dst, const Qwen35RowFn& fill);

}  // namespace tdm::synth
