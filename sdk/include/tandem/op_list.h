/* SPDX-License-Identifier: MIT */
/* tandem/op_list.h: every public op code in one list, for code that needs all
 * of them: the host's op table, op names in messages (tdm::sdk::op_name), the
 * ranges tests walk. tandem/ops.h is the manual (each op's inputs, parameters,
 * output and limits) and declares the enum; this is its index, not a second
 * manual.
 *
 * TDM_OP_LIST(X) expands X(code, NAME, "name", abi, minor) once per op, in code
 * order:
 *   code    the op's tdm_op value, equal to TDM_OP_<NAME> in ops.h (checked by
 *           the host's build and its tests);
 *   "name"  the name in lower case, as messages and profiles print it;
 *   abi, minor  the ABI version that added the op (1, 0: ABI 1; 3, 1: ABI 3.1).
 *               A host offers an op of a minor version only to plugins built
 *               against that minor or a later one (tandem.h §1).
 * Codes run from 1 to TDM_OP_LIST_END - 1 without gaps and are never reused.
 * Adding an op: host/ops/README.md in tandem's sources. */
#ifndef TANDEM_OP_LIST_H
#define TANDEM_OP_LIST_H

/* clang-format off */
#define TDM_OP_LIST(X)                                           \
    X(1,  GET_ROWS,         "get_rows",         1, 0)            \
    X(2,  MATMUL,           "matmul",           1, 0)            \
    X(3,  ADD,              "add",              1, 0)            \
    X(4,  MUL,              "mul",              1, 0)            \
    X(5,  SUB,              "sub",              1, 0)            \
    X(6,  SCALE,            "scale",            1, 0)            \
    X(7,  UNARY,            "unary",            1, 0)            \
    X(8,  GLU,              "glu",              1, 0)            \
    X(9,  RMS_NORM,         "rms_norm",         1, 0)            \
    X(10, L2_NORM,          "l2_norm",          1, 0)            \
    X(11, GATED_RMS_NORM,   "gated_rms_norm",   1, 0)            \
    X(12, ROPE,             "rope",             1, 0)            \
    X(13, SOFTMAX,          "softmax",          1, 0)            \
    X(14, KV_STORE,         "kv_store",         1, 0)            \
    X(15, ATTENTION,        "attention",        1, 0)            \
    X(16, CONCAT,           "concat",           1, 0)            \
    X(17, COPY,             "copy",             1, 0)            \
    X(18, CAST,             "cast",             1, 0)            \
    X(19, ARGMAX,           "argmax",           1, 0)            \
    X(20, TOP_K,            "top_k",            1, 0)            \
    X(21, VIEW_COLS,        "view_cols",        1, 0)            \
    X(22, RESHAPE,          "reshape",          1, 0)            \
    X(23, SELECT_ROWS,      "select_rows",      1, 0)            \
    X(24, CONV1D_CAUSAL,    "conv1d_causal",    1, 0)            \
    X(25, GATED_DELTA_RULE, "gated_delta_rule", 1, 0)            \
    X(26, MATMUL_ID,        "matmul_id",        1, 0)            \
    X(27, MOE_SUM,          "moe_sum",          1, 0)            \
    X(28, CUSTOM,           "custom",           2, 0)            \
    X(29, LAYER_NORM,       "layer_norm",       3, 0)            \
    X(30, ATTENTION_FULL,   "attention_full",   3, 0)            \
    X(31, ADD_RMS_NORM,     "add_rms_norm",     3, 1)
/* clang-format on */

/* One past the highest code in the list (every code below it is an op). */
#define TDM_OP_LIST_COUNT_ONE_(code, NAME, name, abi, minor) +1
enum { TDM_OP_LIST_END = 1 TDM_OP_LIST(TDM_OP_LIST_COUNT_ONE_) };
#undef TDM_OP_LIST_COUNT_ONE_

#endif /* TANDEM_OP_LIST_H */
