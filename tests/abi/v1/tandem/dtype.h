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
    TDM_DTYPE_INVALID = 0x7fffffff
} tdm_dtype;

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_DTYPE_H */
