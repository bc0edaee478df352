/* SPDX-License-Identifier: Apache-2.0 */
/* tandem/ext/custom_op.h: extension "tdm.custom_op", version 1 (ABI 2).
 *
 * A plugin ships a compute shader as SPIR-V and runs it as a graph op
 * (TDM_OP_CUSTOM). Ask for the extension during init:
 *
 *     uint32_t ver = 0;
 *     const tdm_ext_custom_op* ext =
 *         host->get_extension(TDM_EXT_CUSTOM_OP, 1, &ver);
 *     if (!ext) refuse to register, quoting host->last_error();
 *     const tdm_custom_op* op;
 *     if (ext->create(reg, &desc, &op) != TDM_OK) refuse, quoting last_error();
 *
 * and in build_graph emit a tdm_op_desc with op = TDM_OP_CUSTOM, custom = op,
 * the inputs, and the parameters in i[] / f[].
 *
 * The shader's interface, which the host checks when the op is created (SPIR-V
 * magic and version, a GLCompute entry point of the given name, descriptor set
 * 0 with storage buffers at bindings 0..n_inputs only) and errors name:
 *   - binding k (k < n_inputs): input k, a 32-bit array (float[] or int[]);
 *     binding n_inputs: the output array;
 *   - specialization constant 0: the workgroup width (local_size_x_id = 0),
 *     set by the host to local_size_x;
 *   - one push-constant block of 32-bit words, in this order:
 *       rows, cols, out_off, out_stride            (the output)
 *       then per input k: off_k, stride_k, cols_k  (element offsets/strides)
 *       then i[0 .. n_int_params), then f[0 .. n_float_params)
 *     at most tdm_host_limits.max_custom_op_push_bytes bytes (128) in all;
 *   - the dispatch: TDM_CUSTOM_DISPATCH_ELEMENTS: gl_WorkGroupID.y is the
 *     output row, gl_GlobalInvocationID.x the column (groups x =
 *     ceil(cols / local_size_x)); TDM_CUSTOM_DISPATCH_ROWS: one workgroup per
 *     output row (gl_WorkGroupID.y), the workgroup loops over the columns.
 *     Outputs of more than 65535 rows are refused (TDM_ERR_LIMIT).
 *   - the workgroup width is specialization constant 0 (or, in a shader that
 *     does not use it, a literal equal to local_size_x), at most 1024.
 * Refusals of create (last_error() names the op): a malformed descriptor or
 * module, or a shader interface that differs from the above ->
 * TDM_ERR_INVALID_ARGUMENT; an unknown dispatch, output_shape or output_type
 * -> TDM_ERR_UNSUPPORTED; over a host limit (push-constant bytes, local_size_x
 * over 1024, a module over 64 MiB) -> TDM_ERR_LIMIT. n_int_params <= 16 and
 * n_float_params <= 8 (tdm_op_desc's i[] and f[]).
 * In a graph (TDM_OP_CUSTOM), every input has input 0's number of rows
 * (TDM_ERR_SHAPE) and is an activation, not a weight, KV layer or state
 * (TDM_ERR_TYPE).
 * Batch invariance (exact speculative decoding) is the shader's duty: an
 * output row must depend only on the same row of the inputs.
 * Custom ops live until the plugin is unloaded. */
#ifndef TANDEM_EXT_CUSTOM_OP_H
#define TANDEM_EXT_CUSTOM_OP_H

#include "../tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXT_CUSTOM_OP "tdm.custom_op"
#define TDM_EXT_CUSTOM_OP_VERSION 1u
/* Size of tdm_custom_op_desc in version 1 of the extension (LP64): create
 * refuses a smaller struct_size (TDM_ERR_INVALID_ARGUMENT). */
#define TDM_EXT_CUSTOM_OP_V1_SIZEOF_DESC 72u

typedef enum tdm_custom_dispatch {
    TDM_CUSTOM_DISPATCH_ELEMENTS = 0, /* one invocation per output element */
    TDM_CUSTOM_DISPATCH_ROWS = 1,     /* one workgroup per output row */
    TDM_CUSTOM_DISPATCH_MAX_ENUM = 0x7FFFFFFF
} tdm_custom_dispatch;

typedef enum tdm_custom_output_shape {
    TDM_CUSTOM_OUTPUT_LIKE_INPUT0 = 0, /* input 0's shape */
    TDM_CUSTOM_OUTPUT_COLS_PARAM = 1,  /* i[0] columns, input 0's rows */
    TDM_CUSTOM_OUTPUT_SHAPE_MAX_ENUM = 0x7FFFFFFF
} tdm_custom_output_shape;

typedef struct tdm_custom_op_desc {
    uint32_t struct_size;
    const char* name;          /* "myplugin.gate": messages, profiles; copied */
    const uint32_t* spirv;     /* a SPIR-V module; copied by create */
    uint64_t spirv_bytes;      /* a multiple of 4 */
    const char* entry_point;   /* NULL = "main" */
    uint32_t n_inputs;         /* 1..4 */
    uint32_t local_size_x;     /* workgroup width (spec constant 0); 0 = 64 */
    uint32_t dispatch;         /* tdm_custom_dispatch */
    uint32_t output_shape;     /* tdm_custom_output_shape */
    uint32_t output_type;      /* tdm_dtype: TDM_DTYPE_F32 or TDM_DTYPE_I32 */
    uint32_t n_int_params;     /* i[0 .. n) go into the push constants */
    uint32_t n_float_params;   /* f[0 .. n) after them */
} tdm_custom_op_desc;

typedef struct tdm_ext_custom_op {
    uint32_t struct_size;
    /* [init] Checks the descriptor and the SPIR-V interface (errors name the
     * op and what is wrong) and registers the op with the plugin. The
     * pipeline is compiled when a graph first uses it. */
    tdm_status (*create)(tdm_registry* reg, const tdm_custom_op_desc* desc, const tdm_custom_op** out);
} tdm_ext_custom_op;

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_EXT_CUSTOM_OP_H */
