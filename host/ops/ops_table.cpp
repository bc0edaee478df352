// SPDX-License-Identifier: Apache-2.0
// host/ops/ops_table.cpp: the list of ops (each defined in its own file under
// host/ops/), the lookup by op code, and the recording entry point the
// executor calls for every node.
#include <array>
#include <cstdlib>

#include "graph/weight.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {

// Defined in the ops' files (binary.cpp defines add, mul, sub and glu, ...).
extern const OpDef kOpGetRows, kOpMatmul, kOpAdd, kOpMul, kOpSub, kOpScale, kOpUnary, kOpGlu, kOpRmsNorm,
    kOpL2Norm, kOpGatedRmsNorm, kOpRope, kOpSoftmax, kOpKvStore, kOpAttention, kOpConcat, kOpCopy, kOpCast,
    kOpArgmax, kOpTopK, kOpViewCols, kOpReshape, kOpSelectRows, kOpConv1dCausal, kOpGatedDeltaRule, kOpMatmulId,
    kOpMoeSum, kOpCustom, kOpLayerNorm, kOpAttentionFull, kOpQuantizeQ8, kOpMatmulQ8;

namespace {

// Every op the host implements, in code order.
const OpDef* const kOps[] = {
    &kOpGetRows,   &kOpMatmul,   &kOpAdd,      &kOpMul,        &kOpSub,          &kOpScale,
    &kOpUnary,     &kOpGlu,      &kOpRmsNorm,  &kOpL2Norm,     &kOpGatedRmsNorm, &kOpRope,
    &kOpSoftmax,   &kOpKvStore,  &kOpAttention, &kOpConcat,    &kOpCopy,         &kOpCast,
    &kOpArgmax,    &kOpTopK,     &kOpViewCols, &kOpReshape,    &kOpSelectRows,   &kOpConv1dCausal,
    &kOpGatedDeltaRule, &kOpMatmulId, &kOpMoeSum, &kOpCustom, &kOpLayerNorm, &kOpAttentionFull,
};

constexpr uint32_t kCodeLimit = TDM_OP_COUNT_V3;  // codes 0 .. kCodeLimit - 1

// kOps indexed by code (built on first use, so the list's order is free).
const std::array<const OpDef*, kCodeLimit>& by_code() {
    static const std::array<const OpDef*, kCodeLimit> table = [] {
        std::array<const OpDef*, kCodeLimit> t{};
        for (const OpDef* d : kOps) {
            TDM_ASSERT_MSG(uint32_t(d->code) < kCodeLimit && !t[d->code], d->name);
            t[d->code] = d;
        }
        return t;
    }();
    return table;
}

}  // namespace

// Host-internal ops (op_def.h), found by their code.
const OpDef* const kInternalOps[] = {&kOpQuantizeQ8, &kOpMatmulQ8};

const OpDef* find_public_op(uint32_t code) { return code < kCodeLimit ? by_code()[code] : nullptr; }

const OpDef* find_op(uint32_t code) {
    if (code < kCodeLimit) return by_code()[code];
    for (const OpDef* d : kInternalOps)
        if (uint32_t(d->code) == code) return d;
    return nullptr;
}

std::span<const OpDef* const> all_ops() { return kOps; }

uint32_t max_op_code() { return kCodeLimit - 1; }

Error unknown_op(uint32_t code) {
    return Error::coded(TDM_ERR_UNSUPPORTED, "unknown op code {} (this host knows 1..{})", code, max_op_code());
}

const char* op_name(tdm_op op) {
    const OpDef* d = find_op(uint32_t(op));
    return d ? d->name : "unknown";
}

// ---------------------------------------------------------------------------
// recording
// ---------------------------------------------------------------------------
bool kernel::profile_detail() {
    static const bool detail = [] {
        const char* e = std::getenv("TANDEM_PROFILE_DETAIL");
        return e && std::string_view(e) == "1";
    }();
    return detail;
}

vk::Binding kernel::small_weight(const RecordContext& c, TensorId t) {
    return vk::Binding::storage(c.graph.tensor(t).weight->chunks()[0].main);
}

Status record_node(RecordContext& ctx, const Node& node) {
    const OpDesc& d = node.desc;
    const OpDef* def = find_op(d.op);
    if (!def || !def->record) return Error::format("no kernel for op {}", op_name(d.op));
    std::string label = def->name;
    if (kernel::profile_detail()) {
        const Tensor& in0 = ctx.graph.tensor(d.in[0]);
        const Tensor& out = ctx.graph.tensor(node.out);
        label = fmt::format("{} {} [{}x{}] -> [{}x{}]", label, d.name, in0.cols(), in0.rows(), out.cols(), out.rows());
    }
    return def->record(ctx, node, label);
}

}  // namespace tdm
