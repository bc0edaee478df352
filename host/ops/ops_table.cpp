// SPDX-License-Identifier: Apache-2.0
// host/ops/ops_table.cpp: the table of ops, generated from tandem/op_list.h
// (each op defined in its own file under host/ops/), the lookup by op code,
// which plugins may use an op, and the recording entry point the executor
// calls for every node.
#include <array>
#include <cstdlib>
#include <iterator>

#include "graph/weight.h"
#include "ops/op_def.h"
#include "ops/record.h"

namespace tdm {

// Every public op, defined in its op's file as kOpDef_<NAME> (binary.cpp defines
// add, mul, sub and glu, ...), listed once in tandem/op_list.h.
#define TDM_OP_DECLARE_(code, NAME, name, abi, minor) extern const OpDef kOpDef_##NAME;
TDM_OP_LIST(TDM_OP_DECLARE_)
#undef TDM_OP_DECLARE_
extern const OpDef kOpQuantizeQ8, kOpMatmulQ8, kOpNormRope, kOpNormRopeStore, kOpMatmulGroup, kOpNormAdd,
    kOpArgmaxSlices, kOpAttentionPartials, kOpAttentionCombine, kOpAttentionFolded, kOpMatmulGlu, kOpMatmulActMul;

// The list and ops.h's enum name the same codes.
#define TDM_OP_CHECK_CODE_(code, NAME, name, abi, minor) \
    static_assert(code == TDM_OP_##NAME, "tandem/op_list.h: " name " has another code in ops.h");
TDM_OP_LIST(TDM_OP_CHECK_CODE_)
#undef TDM_OP_CHECK_CODE_

namespace {

// Every op the host implements, in code order.
#define TDM_OP_POINTER_(code, NAME, name, abi, minor) &kOpDef_##NAME,
const OpDef* const kOps[] = {TDM_OP_LIST(TDM_OP_POINTER_)};
#undef TDM_OP_POINTER_

// The version that added each op, by code.
struct OpSince {
    uint32_t abi, minor;
};
#define TDM_OP_SINCE_(code, NAME, name, abi, minor) {abi, minor},
const OpSince kSince[] = {{0, 0}, TDM_OP_LIST(TDM_OP_SINCE_)};
#undef TDM_OP_SINCE_

constexpr uint32_t kCodeLimit = TDM_OP_LIST_END;  // codes 0 .. kCodeLimit - 1

#define TDM_OP_CODE_(code, NAME, name, abi, minor) code,
constexpr uint32_t kListedCodes[] = {0, TDM_OP_LIST(TDM_OP_CODE_)};
#undef TDM_OP_CODE_
constexpr bool codes_run_without_gaps() {
    for (uint32_t i = 0; i < std::size(kListedCodes); ++i)
        if (kListedCodes[i] != i) return false;
    return true;
}
static_assert(codes_run_without_gaps(), "tandem/op_list.h: codes must run 1, 2, ... in order, without gaps");

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
const OpDef* const kInternalOps[] = {&kOpQuantizeQ8,  &kOpMatmulQ8,          &kOpNormRope,
                                     &kOpNormRopeStore, &kOpMatmulGroup,   &kOpNormAdd,
                                     &kOpArgmaxSlices, &kOpAttentionPartials, &kOpAttentionCombine,
                                     &kOpAttentionFolded, &kOpMatmulGlu, &kOpMatmulActMul};

const OpDef* find_public_op(uint32_t code) { return code < kCodeLimit ? by_code()[code] : nullptr; }

const OpDef* find_op(uint32_t code) {
    if (code < kCodeLimit) return by_code()[code];
    for (const OpDef* d : kInternalOps)
        if (uint32_t(d->code) == code) return d;
    return nullptr;
}

std::span<const OpDef* const> all_ops() { return kOps; }

Status op_offered(uint32_t code, uint32_t abi, uint32_t minor) {
    const OpDef* def = find_public_op(code);
    if (!def) return unknown_op(code);
    const OpSince& s = kSince[code];
    // Ops of a version's first release are not gated (they never were: a plugin's
    // headers name only its version's); an op of a minor needs a plugin built
    // against that minor.
    if (s.minor == 0 || abi > s.abi || (abi == s.abi && minor >= s.minor)) return {};
    return Error::coded(TDM_ERR_UNSUPPORTED,
                        "{} is an op of ABI {}.{}, the plugin was built against ABI {}.{} (rebuild it against this "
                        "tandem's SDK to use it)",
                        def->name, s.abi, s.minor, abi, minor);
}

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
