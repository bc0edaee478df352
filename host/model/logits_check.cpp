// SPDX-License-Identifier: Apache-2.0
// host/model/logits_check.cpp
#include "model/logits_check.h"

#include "graph/op_location.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace tdm {

std::vector<int32_t> output_positions(const ForwardInput& in) {
    std::vector<int32_t> out;
    out.reserve(in.output_rows.size());
    for (int32_t row : in.output_rows) out.push_back(in.positions[size_t(row)]);
    return out;
}

bool full_logits_check() {
    static const bool on = [] {
        const char* e = std::getenv("TANDEM_CHECK_NAN");
        return e && *e && std::strcmp(e, "0") != 0;
    }();
    return on;
}

Status check_logits_finite(const ForwardOutput& out, uint32_t n_vocab, std::span<const int32_t> positions,
                           bool scan_all) {
    if (n_vocab == 0) return {};
    const bool full = scan_all && out.logits;
    for (uint32_t r = 0; r < out.n_outputs; ++r) {
        const float* row = out.logits ? out.logits + uint64_t(r) * n_vocab : nullptr;
        const int32_t best = out.argmax ? out.argmax[r] : -1;
        // The argmax of a row without a NaN is finite unless a logit overflowed to +inf;
        // an argmax outside the vocabulary means the row cannot be trusted: scan it.
        int64_t bad = -1;
        float x = 0;
        if (!full && best >= 0 && uint32_t(best) < n_vocab && (row || out.argmax_logit)) {
            // the logit at the argmax: from the row, or (logits left on the device) from the graph
            x = row ? row[best] : out.argmax_logit[r];
            if (!std::isfinite(x)) bad = best;
        } else if (row) {
            for (uint32_t v = 0; v < n_vocab && bad < 0; ++v)
                if (!std::isfinite(row[v])) bad = v;
            if (bad >= 0) x = row[bad];
        }
        if (bad < 0) continue;
        const int64_t pos = r < positions.size() ? positions[r] : -1;
        return Error::format(
            "the model produced {} logits at position {} (token {} of the vocabulary is {}): its weights or a "
            "kernel are broken; TANDEM_CHECK_NAN=1 names the first layer that produced a non-finite value",
            std::isnan(x) ? "NaN" : "infinite", pos, bad, std::isnan(x) ? "NaN" : x > 0 ? "+inf" : "-inf");
    }
    return {};
}

Error with_non_finite_origin(const Error& error, const CompiledGraph& graph) {
    if (!graph.has_non_finite_probes()) return error;
    std::string msg = error.message();
    // the generic hint is answered by what follows
    if (const size_t hint = msg.find("; TANDEM_CHECK_NAN=1"); hint != std::string::npos) msg.resize(hint);
    const std::optional<ProbedTensor> first = graph.first_non_finite();
    if (!first) return Error(msg + "; the per-op probes (TANDEM_CHECK_NAN=1) found no op whose result was non-finite");
    return Error(msg + "; first non-finite value in " + describe_op_location(graph.graph(), first->node, first->tensor));
}

}  // namespace tdm
