/* SPDX-License-Identifier: Apache-2.0 */
/* tandem/dtype.h: tensor element types of the tandem plugin ABI.
 *
 * The numeric values are ggml's type ids (GGUF tensor-info "type" field), so a
 * GGUF tensor type can be passed through unchanged. Only the types listed here
 * are understood by the host; any other id is refused with an error naming it.
 * Part of ABI v1; values are never renumbered, new types are only appended. */
#ifndef TANDEM_DTYPE_H
#define TANDEM_DTYPE_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tdm_dtype {
    TDM_DTYPE_F32 = 0,
    TDM_DTYPE_F16 = 1,
    TDM_DTYPE_Q4_0 = 2,
    TDM_DTYPE_Q8_0 = 8,
    TDM_DTYPE_Q4_K = 12,
    TDM_DTYPE_Q5_K = 13,
    TDM_DTYPE_Q6_K = 14,
    TDM_DTYPE_I8 = 24,
    TDM_DTYPE_I16 = 25,
    TDM_DTYPE_I32 = 26,
    TDM_DTYPE_BF16 = 30,
    /* Appended after ABI 2 shipped, without a version bump: dtypes are
     * capabilities, so a plugin asks query_weight_type() before it relies on
     * one (a host that predates them answers TDM_ERR_UNSUPPORTED, "weight type
     * id 6 is unknown"), and tdm_tensor_info.type reports them only on a host
     * that computes with them (older hosts: TDM_DTYPE_INVALID). */
    TDM_DTYPE_Q5_0 = 6,
    TDM_DTYPE_Q5_1 = 7,
    /* Integer tensors (token id tables such as Gemma 4's masked_embd_ordering)
     * are read only with TDM_WEIGHT_F32, converted exactly (values below 2^24):
     * I8, I16, I32 and [v3] I64 (HF int64 buffers). */
    TDM_DTYPE_I64 = 27,
    TDM_DTYPE_INVALID = 0x7fffffff
} tdm_dtype;

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_DTYPE_H */
