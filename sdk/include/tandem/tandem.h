/* SPDX-License-Identifier: MIT */
/* tandem/tandem.h: the tandem plugin ABI, version 3.1 (a host also speaks 1 and 2).
 *
 * A tandem plugin is a shared object that adds model architectures, draft heads
 * and draftless drafters to the tandem runtime. It talks to the host only
 * through this header: plain C, no C++ types, no exceptions, no allocator mixing
 * across the boundary. The in-tree plugins use exactly this ABI.
 *
 * Contents
 *   1. Versioning and the entry point
 *   2. Status codes and errors
 *   3. Handles and small types
 *   4. The host API table (host -> plugin)
 *   5. Architectures (targets)
 *   6. Draft heads (drafters computed on the device, e.g. MTP/NextN heads)
 *   7. Draftless drafters (CPU callbacks, e.g. n-gram tables)
 *   8. The plugin contract (requirements of a well-behaved plugin)
 *
 * ---------------------------------------------------------------------------
 * 1. VERSIONING, THREADS AND LIFETIMES
 *
 * Negotiation. The host offers a range of ABI versions [host_abi_min,
 * host_abi_max]; the plugin answers with the one version it will speak
 * (tdm_negotiate.plugin_abi) or fails with TDM_ERR_ABI_MISMATCH, filling
 * plugin_abi_min/max so the host can print "plugin X speaks ABI 2..3, this host
 * offers 1..1". tdm_negotiate_range() below is the usual body.
 *
 * Minor versions. From ABI 3 on, an addition (an op, an enum value, a field, a
 * host-table entry, an extension) does not raise the version: it raises the
 * minor, TDM_ABI_MINOR_VERSION, and is marked with it ("[v3.1]"; "[v3]" is 3.0).
 * A plugin reports the minor it was built against (tdm_negotiate.plugin_abi_minor,
 * which tdm_negotiate_range() fills), and the host offers it nothing newer:
 * query_op and graph_op refuse it the ops of a later minor. tdm_host_api.abi_minor
 * says which minor is in force. A plugin built against a later minor than the
 * host's asks for what it uses, as across versions (query_op, TDM_HAS_MEMBER).
 *
 * Growing structs (both directions). Every struct that crosses the boundary
 * starts with `struct_size`, the sizeof of the struct as its writer was
 * compiled. Fields are only ever appended; each carries the ABI version that
 * added it ("[v2]"; unmarked fields are v1). A reader copies
 * min(struct_size, its own sizeof) bytes into a zeroed local, so fields the
 * writer did not know read as zero, and zero always means "default / off /
 * absent". A reader refuses a struct only when struct_size is below the size
 * the negotiated version guarantees (TDM_V1_SIZEOF_* below: the sizes of the
 * ABI 1 release). The same holds for the host's function table: a plugin calls
 * an entry appended after v1 only if TDM_HAS_MEMBER(host, tdm_host_api, entry)
 * says the table is long enough (tdm_host_api is never shorter than its v1
 * size, and a host of ABI n fills every entry of ABI n). Arrays of structs
 * (tdm_model_info.attention_layers, ...) are strided by the first element's
 * struct_size, and every element must carry the same struct_size.
 *
 * Capabilities. A plugin asks during init what the host supports: an op and
 * its parameters (query_op), a weight type (query_weight_type), the host's
 * limits (get_limits), and named, versioned extensions (get_extension; each
 * extension has its own header under tandem/ext/). A plugin that lacks
 * something refuses to register with a message that names it, instead of
 * failing at its first forward pass.
 *
 * Threads. Every function below carries one of these tags:
 *   [any thread]  callable from any thread, concurrently with anything.
 *   [init]        only inside tdm_plugin_api.init(), on the thread that loads
 *                 the plugin.
 *   [object]      calls on one model / draft head / drafter object never
 *                 overlap (the host serialises them, possibly from different
 *                 threads over time); calls on different objects may run
 *                 concurrently, so state shared across objects (static data,
 *                 a process-wide cache) needs the plugin's own lock.
 *   [callback]    a function inside a callback, e.g. graph building inside
 *                 build_graph: same thread as that callback, not after it.
 *
 * Lifetimes. Every pointer the host hands a plugin says how long it lives in
 * its comment. Descriptors and the strings they point to, which a plugin hands
 * the host, must live until the plugin's shutdown() (static storage).
 *
 * Enums are 32-bit: each has a _MAX_ENUM = 0x7FFFFFFF sentinel (as Vulkan's),
 * and enum-typed struct fields are therefore 4 bytes on every platform.
 *
 * A plugin exports exactly one symbol, tdm_plugin_negotiate (build with
 * -fvisibility=hidden and TDM_PLUGIN_EXPORT on that function). The host calls it
 * first, once, from one thread. It must not call back into the host: it only
 * fills the negotiation struct. Registration happens afterwards, in
 * tdm_plugin_api.init().
 * ------------------------------------------------------------------------- */
#ifndef TANDEM_TANDEM_H
#define TANDEM_TANDEM_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest ABI version this header describes. */
#define TDM_ABI_VERSION 3u
/* Its minor version (section 1: additions within a version). 0 is ABI 3 as the
 * development builds before tandem 0.3.0 spoke it (3.0), before minors existed. */
#define TDM_ABI_MINOR_VERSION 1u
/* The oldest version a host built from this header still speaks. */
#define TDM_ABI_VERSION_MIN 1u

/* Sizes of the ABI 1 release's structs (LP64). A reader refuses a struct
 * whose struct_size is below its v1 size; fields past a writer's size read as
 * zero. (tdm_weight_request's v1 size is the part before `parts`: the fields
 * from `parts` on were appended during ABI 1.) */
#define TDM_V1_SIZEOF_TENSOR_INFO 48u
#define TDM_V1_SIZEOF_TENSOR_SHAPE 40u
#define TDM_V1_SIZEOF_OP_DESC 152u
#define TDM_V1_SIZEOF_WEIGHT_REQUEST 96u
#define TDM_V1_SIZEOF_BATCH_DESC 12u
#define TDM_V1_SIZEOF_HOST_API 256u
#define TDM_V1_SIZEOF_ATTENTION_LAYER 20u
#define TDM_V1_SIZEOF_RECURRENT_STATE 16u
#define TDM_V1_SIZEOF_MODEL_INFO 56u
#define TDM_V1_SIZEOF_ARCH_DESC 64u
#define TDM_V1_SIZEOF_DRAFT_HEAD_INFO 48u
#define TDM_V1_SIZEOF_DRAFT_HEAD_DESC 64u
#define TDM_V1_SIZEOF_DRAFTER_DESC 72u
#define TDM_V1_SIZEOF_PLUGIN_API 48u
#define TDM_V1_SIZEOF_NEGOTIATE 32u
/* Sizes of the ABI 2 release's structs that ABI 3 grew (the others kept their
 * ABI 2 size, listed in the host's table). */
#define TDM_V2_SIZEOF_DRAFT_HEAD_DESC 64u
/* Sizes of ABI 3.0's structs that 3.1 grew (both written by the host). */
#define TDM_V3_0_SIZEOF_HOST_API 288u
#define TDM_V3_0_SIZEOF_NEGOTIATE 32u

/* True when the struct at `ptr` (of type `type`, with a struct_size) is long
 * enough to hold `member`: use it before reading a field or calling a table
 * entry added after the peer's version. */
#define TDM_HAS_MEMBER(ptr, type, member) \
    ((ptr)->struct_size >= offsetof(type, member) + sizeof(((type*)0)->member))

#if defined(_WIN32)
#define TDM_PLUGIN_EXPORT __declspec(dllexport)
#else
#define TDM_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* Name of the one exported symbol. */
#define TDM_PLUGIN_ENTRY_NAME "tdm_plugin_negotiate"

/* ---------------------------------------------------------------------------
 * 2. STATUS CODES
 *
 * Every fallible call returns a tdm_status. Calls into the host that fail leave
 * a message retrievable with tdm_host_api.last_error() (per thread, valid until
 * the next host call on that thread). Callbacks into the plugin that fail write
 * a NUL-terminated message into the `err` buffer the host passes (err_size bytes
 * including the NUL; truncate if needed). The host never trusts that buffer to
 * be terminated: it reads at most err_size bytes.
 *
 * Graph building (graph_op) maps its refusals as follows: an unknown op or a
 * parameter value the host does not implement -> TDM_ERR_UNSUPPORTED; a bad
 * input count or a tensor of another graph -> TDM_ERR_INVALID_ARGUMENT;
 * mismatched shapes -> TDM_ERR_SHAPE; a wrong element type or tensor kind
 * (an activation where a weight is needed) -> TDM_ERR_TYPE; a size over a host
 * limit (tdm_host_limits) -> TDM_ERR_LIMIT.
 * ------------------------------------------------------------------------- */
typedef enum tdm_status {
    TDM_OK = 0,
    TDM_ERR_INVALID_ARGUMENT = 1, /* a caller passed something malformed */
    TDM_ERR_ABI_MISMATCH = 2,     /* no common ABI version */
    TDM_ERR_NOT_FOUND = 3,        /* key, tensor or name absent */
    TDM_ERR_SHAPE = 4,            /* tensor shape or type differs from the expected */
    TDM_ERR_UNSUPPORTED = 5,      /* valid but not supported (a quant type, an option) */
    TDM_ERR_OUT_OF_MEMORY = 6,    /* host or device memory exhausted */
    TDM_ERR_BAD_MODEL = 7,        /* model file inconsistent (hparams, metadata) */
    TDM_ERR_INTERNAL = 8,         /* a bug: please report */
    TDM_ERR_TYPE = 9,             /* [v2] wrong element type or tensor kind */
    TDM_ERR_LIMIT = 10,           /* [v2] valid, but over a host limit (tdm_host_limits) */
    TDM_STATUS_MAX_ENUM = 0x7FFFFFFF
} tdm_status;

/* ---------------------------------------------------------------------------
 * 3. HANDLES AND SMALL TYPES
 * ------------------------------------------------------------------------- */
typedef struct tdm_registry tdm_registry;         /* registration context (init only) */
typedef struct tdm_model_source tdm_model_source; /* an opened model file or HF directory */
typedef struct tdm_loader tdm_loader;             /* weight loading context (load only) */
typedef struct tdm_weight tdm_weight;             /* a weight resident on the device */
typedef struct tdm_graph tdm_graph;               /* a compute graph under construction */
typedef struct tdm_options tdm_options;           /* key/value options of a drafter or model */

/* A tensor of a graph; valid only for the graph that returned it. id 0 = none. */
typedef struct tdm_tensor {
    uint32_t id;
} tdm_tensor;

typedef enum tdm_log_level {
    TDM_LOG_DEBUG = 1,
    TDM_LOG_INFO = 2,
    TDM_LOG_WARN = 3,
    TDM_LOG_ERROR = 4,
    TDM_LOG_LEVEL_MAX_ENUM = 0x7FFFFFFF
} tdm_log_level;

typedef enum tdm_source_format {
    TDM_SOURCE_GGUF = 0,
    TDM_SOURCE_SAFETENSORS = 1, /* HF directory: metadata keys are config.json paths */
    TDM_SOURCE_FORMAT_MAX_ENUM = 0x7FFFFFFF
} tdm_source_format;

/* Shape and type of a tensor in a model source (ggml order: ne[0] innermost). */
typedef struct tdm_tensor_info {
    uint32_t struct_size;
    tdm_dtype type;    /* TDM_DTYPE_INVALID if the file's type is unsupported */
    uint32_t n_dims;
    int64_t ne[4];
} tdm_tensor_info;

/* Shape of a graph tensor. */
typedef struct tdm_tensor_shape {
    uint32_t struct_size;
    tdm_dtype type;
    int64_t ne[4];
} tdm_tensor_shape;

typedef struct tdm_custom_op tdm_custom_op;      /* [v2] a plugin's SPIR-V op (tandem/ext/custom_op.h) */

/* One op of a graph (see ops.h for each op's inputs and params). The host
 * copies it during graph_op; nothing in it needs to outlive that call. */
typedef struct tdm_op_desc {
    uint32_t struct_size;
    uint32_t op;             /* tdm_op */
    uint32_t n_inputs;
    tdm_tensor inputs[8];
    int32_t i[16];           /* integer params; zero = the op's default */
    float f[8];              /* float params; zero = the op's default */
    const char* name;        /* optional: names the result (debug dumps, taps); NULL ok */
    const tdm_custom_op* custom; /* [v2] TDM_OP_CUSTOM only: the op to run (NULL otherwise) */
} tdm_op_desc;

/* Transforms applied once by the host's weight loader (section 5: load). */
typedef enum tdm_weight_flags {
    TDM_WEIGHT_OPTIONAL = 1u << 0,  /* absent tensor: *out = NULL, TDM_OK */
    TDM_WEIGHT_F32 = 1u << 1,       /* convert to f32 (norms, small vectors) */
    TDM_WEIGHT_ADD_ONE = 1u << 2,   /* w := 1 + w (HF Qwen3.5 / Gemma 1-3 norms); implies F32 */
    TDM_WEIGHT_NEG_EXP = 1u << 3,   /* w := -exp(w) (HF A_log -> GGUF ssm_a); implies F32 */
    /* [v3] Read the tensor as the 2-D request [ne0, ne1] (both given), row-major as
     * stored: ne0 * ne1 elements, ne0 a multiple of the stored rows' length, e.g. a
     * convolution kernel [out][in][kh][kw] as the matrix of one output per row,
     * ne0 = in*kh*kw. A host of ABI 1 or 2 refuses the shape (TDM_ERR_SHAPE). Not
     * with parts or slabs. */
    TDM_WEIGHT_FLATTEN = 1u << 4,
    TDM_WEIGHT_FLAGS_MAX_ENUM = 0x7FFFFFFF
} tdm_weight_flags;

/* A weight the plugin asks the host to load from the model source. The host
 * reads it (and the arrays it points to) only during load_weight. */
typedef struct tdm_weight_request {
    uint32_t struct_size;
    const char* name;        /* tensor name in the source (GGUF or HF spelling) */
    uint32_t n_dims;         /* expected rank (1..4) */
    int64_t ne[4];           /* expected shape, ggml order; 0 = any size in that dim */
    uint32_t flags;          /* tdm_weight_flags */
    /* Optional row permutation: output row r = source row row_perm[r] (row =
     * index over ne[1]*ne[2]*ne[3]); n_row_perm must equal the row count. Works for
     * every type (whole rows). Used for head reordering. */
    const int64_t* row_perm;
    uint64_t n_row_perm;
    /* Optional column permutation: output column c = source column col_perm[c];
     * only for unquantized sources (F32/F16/BF16). */
    const int64_t* col_perm;
    uint64_t n_col_perm;
    /* Optional stacking (MoE experts stored one tensor per expert): when
     * n_parts > 0 the weight is the tensors parts[0..n_parts), each of the
     * requested shape, stacked along a new outer dimension of size n_parts
     * (ne[n_dims] = n_parts); `name` only names the weight in messages. */
    const char* const* parts;  /* appended during ABI 1 (from here on: absent in the v1 minimum) */
    uint32_t n_parts;
    /* Optional row range of every matrix (each ne[0] x ne[1] slab): when
     * slab_rows > 0 only rows [slab_row_first, slab_row_first + slab_rows) of
     * each slab are kept, so the result has ne[1] = slab_rows. Splits fused
     * tensors such as HF's experts.gate_up_proj. Applied before row_perm. */
    int64_t slab_row_first;
    int64_t slab_rows;
} tdm_weight_request;

/* ---------------------------------------------------------------------------
 * Graph inputs the host provides and outputs a plugin designates.
 * ------------------------------------------------------------------------- */
typedef enum tdm_graph_input {
    TDM_INPUT_TOKENS = 0,        /* I32 [n_tokens] */
    TDM_INPUT_POSITIONS = 1,     /* I32 [n_tokens]: position of each row in its sequence */
    TDM_INPUT_POSITIONS_4 = 2,   /* I32 [4, n_tokens]: M-RoPE streams t,h,w,e (text: p,p,p,0) */
    TDM_INPUT_OUTPUT_ROWS = 3,   /* I32 [n_outputs]: rows whose logits are wanted, ascending */
    TDM_INPUT_TARGET_HIDDEN = 4, /* F32 [n_embd_target, n_tokens]: draft heads only */
    TDM_GRAPH_INPUT_MAX_ENUM = 0x7FFFFFFF
} tdm_graph_input;

typedef enum tdm_graph_output {
    TDM_OUTPUT_LOGITS = 0,          /* F32 [n_vocab, n_outputs] (required) */
    TDM_OUTPUT_HIDDEN_PRE_NORM = 1, /* F32 [n_embd, n_tokens]: residual stream before the final norm */
    TDM_OUTPUT_HIDDEN_POST_NORM = 2,/* F32 [n_embd, n_tokens]: input of the LM head */
    TDM_OUTPUT_HIDDEN_DRAFT = 3,    /* F32 [n_embd, n_outputs]: a draft head's hidden for chaining */
    /* [v3] I32 [n_outputs]: a draft head's own choice of token per output row (e.g.
     * the argmax over a centroid-masked candidate set); the host then drafts it
     * instead of the argmax of TDM_OUTPUT_LOGITS, which the head may leave unset. */
    TDM_OUTPUT_DRAFT_TOKENS = 4,
    TDM_GRAPH_OUTPUT_MAX_ENUM = 0x7FFFFFFF
} tdm_graph_output;

/* What the host asks a forward graph to compute. Lives during build_graph /
 * build_step. */
typedef struct tdm_batch_desc {
    uint32_t struct_size;
    uint32_t n_tokens;   /* rows of the batch (tokens of one or more sequences) */
    uint32_t n_outputs;  /* rows that need logits (1..n_tokens) */
    /* [v3] (read it with TDM_HAS_MEMBER: a host of ABI 1 or 2 passes struct_size
     * 12). A draft head's step: the host asks for draft logits
     * over the first `draft_vocab` token ids only (a reduced draft vocabulary
     * chosen per round, e.g. from the ids of the sequence's text); 0 = the head's
     * own choice (its draft_vocab option, else the whole vocabulary). A head that
     * ignores it stays correct: the host takes logits of any width up to n_vocab.
     * Always 0 for a target's build_graph. */
    uint32_t draft_vocab;
} tdm_batch_desc;

/* ---------------------------------------------------------------------------
 * 4. THE HOST API TABLE (host -> plugin). Append-only.
 *
 * The table itself is static in the host: valid from init() until the
 * plugin's shutdown() returns.
 *
 * Metadata keys: for GGUF sources the GGUF key ("qwen3.block_count"); for HF
 * sources a path into config.json with '.' between object keys and array
 * indices ("text_config.hidden_size", "text_config.layer_types.3"). Integer
 * getters accept any integer type (and bools); float getters accept floats
 * and integers. A tdm_model_source handle is valid during the create/load
 * callback it is passed to (and, for a draft head, as long as the head).
 * ------------------------------------------------------------------------- */
typedef struct tdm_arch_desc tdm_arch_desc;
typedef struct tdm_draft_head_desc tdm_draft_head_desc;
typedef struct tdm_drafter_desc tdm_drafter_desc;

/* [v2] Limits of the host's ops (get_limits). Sizes past a limit are refused
 * with TDM_ERR_LIMIT when the graph is built. */
typedef struct tdm_host_limits {
    uint32_t struct_size;
    uint32_t max_op_inputs;              /* inputs of one op (8) */
    uint32_t max_verify_rows;            /* rows a batch-invariant matmul/attention handles alike (16) */
    uint32_t max_query_heads_per_kv_head;/* attention's GQA ratio (16) */
    uint32_t max_top_k;                  /* TDM_OP_TOP_K's k (256) */
    uint32_t max_delta_rule_chunk;       /* TDM_OP_GATED_DELTA_RULE's i[5] (64) */
    uint32_t weight_row_align_bytes;     /* matmul/get_rows weight rows: a multiple of this (16) */
    uint32_t activation_align_elems;     /* matmul input offsets and row strides: a multiple of this (4) */
    uint32_t get_rows_width_multiple;    /* get_rows: row width a multiple of this (4) */
    uint32_t max_custom_op_push_bytes;   /* custom ops: push-constant block (128) */
} tdm_host_limits;

typedef struct tdm_host_api {
    uint32_t struct_size;
    uint32_t abi_version;      /* the negotiated version */
    const char* host_version;  /* tandem's release, "0.3.0"; static */

    /* Logging; `plugin` is the plugin's name. [any thread] */
    void (*log)(tdm_log_level level, const char* plugin, const char* message);
    /* Message of the last failed host call on this thread ("" if none); valid
     * until the next host call on this thread. [any thread] */
    const char* (*last_error)(void);

    /* Registration. [init] The host copies each descriptor (min(struct_size,
     * its sizeof) bytes); the strings, arrays and functions it points to must
     * stay valid until the plugin's shutdown() (static storage is the norm). */
    tdm_status (*register_arch)(tdm_registry* reg, const tdm_arch_desc* desc);
    tdm_status (*register_draft_head)(tdm_registry* reg, const tdm_draft_head_desc* desc);
    tdm_status (*register_drafter)(tdm_registry* reg, const tdm_drafter_desc* desc);

    /* Model source: metadata. [object] (inside the callback that received
     * `src`; a source shared by a target and its head is locked by the host).
     * Strings returned stay valid while the source is open; asking for the
     * same key again returns the same storage (memory per source is bounded by
     * its number of keys). */
    tdm_source_format (*source_format)(const tdm_model_source* src);
    const char* (*source_path)(const tdm_model_source* src);
    int (*meta_has)(const tdm_model_source* src, const char* key);
    tdm_status (*meta_get_int)(const tdm_model_source* src, const char* key, int64_t* out);
    tdm_status (*meta_get_float)(const tdm_model_source* src, const char* key, double* out);
    tdm_status (*meta_get_bool)(const tdm_model_source* src, const char* key, int* out);
    tdm_status (*meta_get_string)(const tdm_model_source* src, const char* key, const char** out);
    /* Arrays: writes up to `cap` elements, the full length to *n. An integer
     * array may be stored as any integer type or as BOOL (GGUF BOOL arrays,
     * JSON arrays of true/false: each element reads as 0 or 1; a non-zero GGUF
     * byte is true), e.g. gemma4.attention.sliding_window_pattern. */
    tdm_status (*meta_get_int_array)(const tdm_model_source* src, const char* key, int64_t* out, uint64_t cap,
                                     uint64_t* n);
    tdm_status (*meta_get_float_array)(const tdm_model_source* src, const char* key, double* out, uint64_t cap,
                                       uint64_t* n);
    /* Model source: tensors. TDM_ERR_NOT_FOUND if absent. [object] */
    tdm_status (*tensor_info)(const tdm_model_source* src, const char* name, tdm_tensor_info* out);

    /* Weight loading: only inside load callbacks. [callback] Checks the shape
     * (errors name the tensor, expected and found), the type, applies the
     * transforms, uploads. The weight lives as long as the model (or head)
     * that loaded it. */
    tdm_status (*load_weight)(tdm_loader* loader, const tdm_weight_request* req, const tdm_weight** out);
    /* Shape of a loaded weight. [any thread] */
    tdm_status (*weight_shape)(const tdm_weight* w, tdm_tensor_shape* out);

    /* Graph building: only inside build callbacks. [callback] Tensors are
     * valid for the graph that returned them, until the callback returns. */
    tdm_status (*graph_op)(tdm_graph* g, const tdm_op_desc* op, tdm_tensor* out);
    /* Second output of an op that has two (TDM_OP_TOP_K values: index 1). */
    tdm_status (*graph_op_output)(tdm_graph* g, tdm_tensor op_result, uint32_t index, tdm_tensor* out);
    tdm_status (*graph_weight)(tdm_graph* g, const tdm_weight* w, tdm_tensor* out);
    tdm_status (*graph_input)(tdm_graph* g, tdm_graph_input which, tdm_tensor* out);
    /* The KV layer `layer` of the model being built (index into the attention
     * layers it declared). Draft heads: their own layers. */
    tdm_status (*graph_kv)(tdm_graph* g, uint32_t layer, tdm_tensor* out);
    /* Draft heads only: read access to the target's attention layer `layer`
     * (declared in tdm_draft_head_info.target_kv_layers). */
    tdm_status (*graph_target_kv)(tdm_graph* g, uint32_t layer, tdm_tensor* out);
    tdm_status (*graph_set_output)(tdm_graph* g, tdm_graph_output which, tdm_tensor t);
    tdm_status (*graph_tensor_shape)(tdm_graph* g, tdm_tensor t, tdm_tensor_shape* out);

    /* Options (drafter parameters, [plugins.<name>] config tables). [object]
     * (inside the create callback that received them); strings live as long
     * as the options handle, i.e. during that callback. */
    tdm_status (*option_get_int)(const tdm_options* o, const char* key, int64_t* out);
    tdm_status (*option_get_float)(const tdm_options* o, const char* key, double* out);
    tdm_status (*option_get_string)(const tdm_options* o, const char* key, const char** out);

    /* The recurrent state `index` (into the states the model declared) of the
     * batch's sequence (with TDM_MODEL_BATCHED_STATES, of each row's sequence:
     * the ops that update states run every sequence's rows from that sequence's
     * checkpoint); pass it to those ops. [callback] (appended during ABI 1) */
    tdm_status (*graph_state)(tdm_graph* g, uint32_t index, tdm_tensor* out);
    /* The first n_rows rows of a 2-D weight, without a copy: e.g. the LM head
     * rows of a reduced draft vocabulary (the token ids 0..n_rows-1).
     * [callback] (appended during ABI 1) */
    tdm_status (*graph_weight_rows)(tdm_graph* g, const tdm_weight* w, uint64_t n_rows, tdm_tensor* out);

    /* ---- [v2] capability queries. [any thread] ---- */
    /* Does the host implement this op with these parameters? `desc->op` and
     * its i[]/f[] (and `custom`) are checked as graph_op would check them;
     * inputs are ignored (n_inputs may be 0). TDM_OK; TDM_ERR_UNSUPPORTED (an
     * unknown op, or a parameter value the host does not implement) or
     * TDM_ERR_LIMIT (a parameter over a host limit, e.g. top_k's k > 256),
     * with last_error() naming the op and the parameter; TDM_ERR_INVALID_ARGUMENT
     * for a desc shorter than its ABI 1 size, or TDM_OP_CUSTOM without `custom`
     * (whether custom ops exist at all: get_extension(TDM_EXT_CUSTOM_OP)).
     * Parameters without a zero default (ops.h: top_k's k, rope's theta, the
     * gated delta rule's head counts) must be set, as graph_op needs them. */
    tdm_status (*query_op)(const tdm_op_desc* desc);
    /* Can weights of this type feed `op` (TDM_OP_MATMUL, TDM_OP_GET_ROWS,
     * TDM_OP_MATMUL_ID)? TDM_OK or TDM_ERR_UNSUPPORTED. */
    tdm_status (*query_weight_type)(tdm_dtype type, uint32_t op);
    /* The host's limits; `out->struct_size` set by the caller. */
    tdm_status (*get_limits)(tdm_host_limits* out);
    /* A named, versioned extension (TDM_EXT_* in tandem/ext/): its function
     * table if the host offers `name` at `min_version` or later, else NULL
     * (last_error() says which versions it has). *version (may be NULL) gets
     * the version offered. The table is static: valid until shutdown(). */
    const void* (*get_extension)(const char* name, uint32_t min_version, uint32_t* version);

    /* [v3.1] The minor of abi_version in force: the lower of the host's
     * TDM_ABI_MINOR_VERSION and the one the plugin was built against; 0 below
     * ABI 3. On a 3.0 host the table ends before it (TDM_HAS_MEMBER): minor 0. */
    uint32_t abi_minor;
} tdm_host_api;

/* ---------------------------------------------------------------------------
 * 5. ARCHITECTURES
 *
 * Lifecycle: create (parse hparams, declare memory) -> load (weights) ->
 * build_graph (any number of times, one per batch shape; the host compiles and
 * caches each graph and replays it) -> destroy. [object]: calls for one model
 * never overlap; two models of one architecture may be driven concurrently.
 * ------------------------------------------------------------------------- */

/* An attention layer whose K/V the host keeps in its paged KV pool. */
typedef struct tdm_attention_layer {
    uint32_t struct_size;
    uint32_t n_kv_head;
    uint32_t head_dim_k;
    uint32_t head_dim_v;
    uint32_t window;      /* sliding window in tokens; 0 = full attention. The host
                           * may keep only the last `window` positions of such a
                           * layer (plus one batch) in a ring: attention over it
                           * must use a window of at most this, else TDM_OP_ATTENTION
                           * fails with TDM_ERR_UNSUPPORTED when the graph is built. */
} tdm_attention_layer;

/* A recurrent state (e.g. a Gated DeltaNet layer's conv state or its SSM
 * state) of n_f32 floats per sequence. The host keeps several checkpoints of it
 * per sequence (enough for a verify pass of --draft-max + 1 tokens): ops that
 * update a state (TDM_OP_CONV1D_CAUSAL, TDM_OP_GATED_DELTA_RULE) read the
 * current checkpoint and write the state after each token into the next ones,
 * so rolling back rejected drafts only selects a checkpoint (no recomputation,
 * no copy through the host). New sequences start from zeros. With
 * TDM_MODEL_BATCHED_STATES a batch may hold rows of several sequences (a
 * server's pass): each sequence's rows are consecutive and in position order,
 * and each reads and writes its own state. */
typedef struct tdm_recurrent_state {
    uint32_t struct_size;
    uint64_t n_f32;       /* f32 elements per sequence */
} tdm_recurrent_state;

/* Filled by tdm_arch_desc.create. Arrays are owned by the plugin's model and
 * must stay valid until destroy. */
typedef struct tdm_model_info {
    uint32_t struct_size;
    uint32_t n_vocab;
    uint32_t n_embd;
    uint32_t n_ctx_train;
    uint32_t n_attention_layers;
    const tdm_attention_layer* attention_layers;
    uint32_t n_recurrent_states;
    const tdm_recurrent_state* recurrent_states;
    const char* description;  /* optional multi-line "key = value" hparams for `tandem info` */
    uint32_t flags;           /* [v3] TDM_MODEL_* (a host of ABI 1 or 2
                               * passes a struct_size without it: write it only where
                               * struct_size covers it, as tdm::sdk::set_model_info does) */
} tdm_model_info;

/* tdm_model_info.flags: the forward takes rows of several sequences in one batch
 * with its recurrent states: it updates them only through the ops that run each
 * sequence's rows from that sequence's checkpoint (TDM_OP_CONV1D_CAUSAL,
 * TDM_OP_GATED_DELTA_RULE). Without it (a plugin built before the flag, or a
 * forward that reads graph_state in any other way), a model with recurrent
 * states gets batches of one sequence. Models without recurrent states batch
 * sequences either way. */
#define TDM_MODEL_BATCHED_STATES (1u << 0)

struct tdm_arch_desc {
    uint32_t struct_size;
    const char* name;                     /* "qwen3" */
    const char* const* gguf_names;        /* NULL-terminated general.architecture values */
    const char* const* hf_model_types;    /* NULL-terminated config.json model_type values */

    /* Parses hyper-parameters from `src` and declares memory. On success *model
     * is the plugin's model object (opaque to the host). `options` may be NULL.
     * `info` is the host's (struct_size set, zeroed); its arrays and strings
     * must stay valid until destroy. */
    tdm_status (*create)(const tdm_host_api* host, const tdm_model_source* src, const tdm_options* options,
                         tdm_model_info* info, void** model, char* err, size_t err_size);
    /* Loads every weight through host->load_weight. `loader` lives during this call. */
    tdm_status (*load)(void* model, tdm_loader* loader, char* err, size_t err_size);
    /* Builds the forward pass for one batch: read TDM_INPUT_TOKENS/POSITIONS,
     * store K/V with TDM_OP_KV_STORE into graph_kv layers, attend, and set
     * TDM_OUTPUT_LOGITS for the rows in TDM_INPUT_OUTPUT_ROWS. Should also set
     * the hidden-state outputs it can (the host keeps only those a drafter asks
     * for). */
    tdm_status (*build_graph)(void* model, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size);
    void (*destroy)(void* model);
};

/* ---------------------------------------------------------------------------
 * 6. DRAFT HEADS (drafters computed on the device)
 *
 * A draft head proposes tokens for a target model from the target's hidden
 * states (MTP/NextN heads, assistant models). It may read the target's KV
 * layers and keep attention layers of its own (rolled back with the target).
 * Its weights may come from the target's own file (shared source, mapped once)
 * or a separate file. [object] for each head; a head's calls never overlap
 * with build_graph of its target.
 * ------------------------------------------------------------------------- */
typedef enum tdm_hidden_point {
    TDM_HIDDEN_NONE = 0,
    TDM_HIDDEN_PRE_NORM = 1,  /* target residual stream before the final norm */
    TDM_HIDDEN_POST_NORM = 2, /* target LM-head input (llama.cpp, vLLM, HF) */
    TDM_HIDDEN_POINT_MAX_ENUM = 0x7FFFFFFF
} tdm_hidden_point;

/* [v3] How a draft head drafts (tdm_draft_head_info.flags). */
typedef enum tdm_draft_head_flags {
    /* Every step of a round sits at ONE position p, that of the round's newest
     * token (the one the target has not processed yet): TDM_INPUT_POSITIONS is p
     * for each step, and the head's attention over the target's KV sees exactly
     * the committed positions < p (the host sets the batch's causal bound to
     * p - 1), never a stale entry at p or later. (Gemma 4's assistant.) */
    TDM_DRAFT_HEAD_CONSTANT_POSITION = 1u << 0,
    /* No KV and no state of its own (n_own_layers must be 0): a round is one row,
     * the newest token and the target hidden that produced it, then the chained
     * steps; no catch-up over earlier positions, nothing to roll back. */
    TDM_DRAFT_HEAD_STATELESS = 1u << 1,
    TDM_DRAFT_HEAD_FLAGS_MAX_ENUM = 0x7FFFFFFF
} tdm_draft_head_flags;

typedef struct tdm_draft_head_info {
    uint32_t struct_size;
    tdm_hidden_point hidden;                 /* which target hidden state each step needs */
    uint32_t n_own_layers;                   /* attention layers of its own */
    const tdm_attention_layer* own_layers;
    uint32_t n_target_kv_layers;             /* target layers it reads ([v3] read-only: a KV_STORE into one is refused) */
    const uint32_t* target_kv_layers;
    uint32_t n_embd;                         /* width of TDM_OUTPUT_HIDDEN_DRAFT */
    uint32_t flags;                          /* [v3] tdm_draft_head_flags (in what was padding: the
                                                struct's size is unchanged; read from ABI 3 plugins only) */
} tdm_draft_head_info;

struct tdm_draft_head_desc {
    uint32_t struct_size;
    const char* name;                       /* "qwen35-mtp" */
    const char* const* spec_types;          /* NULL-terminated --spec-type names: "mtp", "nextn", ... */
    const char* const* target_archs;        /* NULL-terminated arch names it attaches to */
    /* `src` holds the head's weights (the target's file, or a side file);
     * `target` is the target's model object when the target is of this plugin's
     * architecture (NULL otherwise). Fails with TDM_ERR_NOT_FOUND and a message
     * saying how to get a file with a head when `src` has none.
     * Lifetimes: `target` stays valid (and its weights loaded) until this
     * head's destroy returns: the host destroys every head before its target.
     * The head may read the target object but never call its callbacks or
     * change it. `src` stays valid until destroy too. */
    tdm_status (*create)(const tdm_host_api* host, const tdm_model_source* src, void* target,
                         const tdm_options* options, tdm_draft_head_info* info, void** head, char* err,
                         size_t err_size);
    tdm_status (*load)(void* head, tdm_loader* loader, char* err, size_t err_size);
    /* One draft step over a batch: inputs TDM_INPUT_TOKENS, TDM_INPUT_POSITIONS,
     * TDM_INPUT_TARGET_HIDDEN (the hidden that produced each token); outputs
     * TDM_OUTPUT_LOGITS and TDM_OUTPUT_HIDDEN_DRAFT for the output rows. The host
     * chains steps (hidden <- HIDDEN_DRAFT, token <- argmax in the graph). The
     * logits may cover only the first ids of the vocabulary (a reduced draft
     * vocabulary): drafts are then ids below that count. */
    tdm_status (*build_step)(void* head, tdm_graph* g, const tdm_batch_desc* batch, char* err, size_t err_size);
    void (*destroy)(void* head);
    /* [v3] NULL-terminated GGUF general.architecture / HF model_type values of
     * files that hold this head alone (an assistant model: "gemma4-assistant",
     * "gemma4_assistant"): `-md FILE` (--model-draft) with such a file drafts
     * with this head instead of loading FILE as a draft model. NULL: none. */
    const char* const* source_archs;
};

/* ---------------------------------------------------------------------------
 * 7. DRAFTLESS DRAFTERS (CPU callbacks)
 *
 * Propose tokens from the token history alone. One drafter object per
 * sequence; [object]: calls for one object never overlap. A drafter may share
 * state across its objects (e.g. a process-wide n-gram pool); it then
 * synchronises itself. Pointers passed to the callbacks (prompt, history, out)
 * are valid during the call only.
 *
 * Failure [v2]: a drafter that can fail sets begin2/propose2/accept2 (the host
 * then ignores begin/propose/accept, which may be NULL). On an error status the
 * host turns the drafter off for the rest of that sequence, logs the message
 * once, and carries on without it: the output stays exact, only slower.
 * ------------------------------------------------------------------------- */
struct tdm_drafter_desc {
    uint32_t struct_size;
    const char* name;               /* "ngram-simple" (statistics are printed under this name) */
    const char* const* spec_types;  /* NULL-terminated --spec-type names it answers to */
    /* Options keys are the TOML [speculative] keys: "ngram_size_n", "ngram_size_m",
     * "ngram_min_hits", "ngram_cache", "draft_max". */
    tdm_status (*create)(const tdm_host_api* host, const tdm_options* options, void** drafter, char* err,
                         size_t err_size);
    void (*destroy)(void* drafter);
    /* A new sequence starts with this prompt. */
    void (*begin)(void* drafter, const int32_t* prompt, uint64_t n_prompt);
    /* Proposes up to `max` tokens to follow `history` (prompt + everything
     * accepted so far, the last token included); returns how many it wrote to
     * `out` (0: no proposal). */
    uint64_t (*propose)(void* drafter, const int32_t* history, uint64_t n_history, int32_t* out, uint64_t max);
    /* Result of verifying the last proposal: the first n_accepted drafts were
     * accepted; `history` now ends with the accepted drafts and the target's
     * token. */
    void (*accept)(void* drafter, const int32_t* history, uint64_t n_history, uint64_t n_drafted,
                   uint64_t n_accepted);
    /* Optional (may be NULL): persist state (e.g. a static n-gram cache) when the
     * host shuts the drafter down. */
    tdm_status (*save)(void* drafter, char* err, size_t err_size);

    /* [v2] The same three calls with a status and a message. */
    tdm_status (*begin2)(void* drafter, const int32_t* prompt, uint64_t n_prompt, char* err, size_t err_size);
    /* Writes up to `max` tokens to `out` and their count to *n_out (0: no proposal). */
    tdm_status (*propose2)(void* drafter, const int32_t* history, uint64_t n_history, int32_t* out, uint64_t max,
                           uint64_t* n_out, char* err, size_t err_size);
    tdm_status (*accept2)(void* drafter, const int32_t* history, uint64_t n_history, uint64_t n_drafted,
                          uint64_t n_accepted, char* err, size_t err_size);
};

/* ---------------------------------------------------------------------------
 * Entry point
 * ------------------------------------------------------------------------- */
typedef struct tdm_plugin_api {
    uint32_t struct_size;
    const char* name;         /* "qwen-nextn" */
    const char* version;      /* plugin version, free form */
    const char* description;  /* one line */
    /* Registers everything the plugin provides. Called once after negotiation,
     * on the loading thread; `host` is valid until shutdown() returns, `reg`
     * only during init. */
    tdm_status (*init)(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size);
    /* Called once before unloading (may be NULL), after every object the
     * plugin created has been destroyed. */
    void (*shutdown)(void);
} tdm_plugin_api;

typedef struct tdm_negotiate {
    uint32_t struct_size;
    uint32_t host_abi_min;              /* in */
    uint32_t host_abi_max;              /* in */
    uint32_t plugin_abi;                /* out: the version the plugin will speak */
    uint32_t plugin_abi_min;            /* out: the plugin's range (for error messages) */
    uint32_t plugin_abi_max;            /* out */
    const tdm_plugin_api* plugin_api;   /* out: static storage */
    /* [v3.1] out: the minor of plugin_abi the plugin was built against
     * (TDM_ABI_MINOR_VERSION when plugin_abi is TDM_ABI_VERSION; 0 for the older
     * versions, which have no minors). Written only when struct_size covers it:
     * a 3.0 host passes 32 bytes. Left 0: the plugin is taken as built against
     * 3.0. */
    uint32_t plugin_abi_minor;
} tdm_negotiate;

typedef tdm_status (*tdm_plugin_negotiate_fn)(tdm_negotiate* n);

/* The one symbol a plugin defines and exports. */
TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n);

/* Convenience for plugins: the usual negotiation body. The plugin speaks any
 * version in [abi_min, abi_max]; the highest one the host also offers wins. It
 * reports the minor this header describes (section 1, minor versions).
 * A plugin that calls v2 entries of the host table (capability queries)
 * passes abi_min = 2, so that a v1 host refuses it with both ranges named. */
static inline tdm_status tdm_negotiate_range(tdm_negotiate* n, const tdm_plugin_api* api, uint32_t abi_min,
                                             uint32_t abi_max) {
    if (!n || n->struct_size < TDM_V1_SIZEOF_NEGOTIATE) return TDM_ERR_INVALID_ARGUMENT;
    n->plugin_abi_min = abi_min;
    n->plugin_abi_max = abi_max;
    if (n->host_abi_min > abi_max || n->host_abi_max < abi_min) return TDM_ERR_ABI_MISMATCH;
    n->plugin_abi = n->host_abi_max < abi_max ? n->host_abi_max : abi_max;
    n->plugin_api = api;
    if (TDM_HAS_MEMBER(n, tdm_negotiate, plugin_abi_minor))
        n->plugin_abi_minor = n->plugin_abi == TDM_ABI_VERSION ? TDM_ABI_MINOR_VERSION : 0u;
    return TDM_OK;
}

/* ABI 1's helper, kept for source compatibility: speaks version 1 only. */
static inline tdm_status tdm_negotiate_v1(tdm_negotiate* n, const tdm_plugin_api* api) {
    return tdm_negotiate_range(n, api, 1, 1);
}

/* ---------------------------------------------------------------------------
 * 8. THE PLUGIN CONTRACT
 *
 *  #  Requirement                                              If broken
 *  1  Export only tdm_plugin_negotiate (-fvisibility=hidden).  Symbol clashes between plugins.
 *  2  Do not call the host from tdm_plugin_negotiate.          Undefined: the table is not set up.
 *  3  Fill struct_size in every struct you pass to the host;   The host refuses the call
 *     read structs and tables the host passes you only up to   (TDM_ERR_INVALID_ARGUMENT);
 *     their struct_size (TDM_HAS_MEMBER).                      you read garbage.
 *  4  Never let a C++ exception or a longjmp cross the ABI.    The host process terminates.
 *  5  Never free host memory or hand the host memory it must   Heap corruption.
 *     free; strings you return live in your static storage
 *     or your model object.
 *  6  Never exit() or abort(): return a status and a message.  The host (a server) dies.
 *  7  Treat model files as untrusted: validate hparams before  Crashes on malicious files.
 *     using them for sizes (the host validates tensors).
 *  8  Keep graphs batch-invariant: use host ops; a custom      Speculative decoding stops being
 *     reduction order must not depend on n_tokens.             exact.
 *  9  build_graph must be deterministic for a batch shape:     Cached graphs would differ from
 *     same batch desc, same graph.                             fresh ones.
 * 10  Check in init what you need (query_op, get_extension)    A forward pass fails mid-generation
 *     and refuse to register with a message naming it.         instead of at load.
 * ------------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_TANDEM_H */
