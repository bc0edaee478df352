// SPDX-License-Identifier: Apache-2.0
// tests/support/prefill.cpp
#include "support/prefill.h"

#include <numeric>
#include <vector>

namespace tdm::test {

Result<ForwardOutput> prefill(Runner& runner, int seq, std::span<const int32_t> prompt, uint32_t n_batch,
                              bool logits_all, const LogitsSink& sink) {
    if (prompt.empty() || n_batch == 0) return Error("prefill: an empty prompt or chunk");
    const uint32_t n_vocab = runner.model().info().n_vocab;
    ForwardOutput out;
    std::vector<int32_t> pos, rows;
    for (size_t c0 = 0; c0 < prompt.size(); c0 += n_batch) {
        const uint32_t n = uint32_t(std::min<size_t>(n_batch, prompt.size() - c0));
        pos.resize(n);
        std::iota(pos.begin(), pos.end(), int32_t(c0));
        rows.clear();
        for (uint32_t i = logits_all ? 0 : n - 1; i < n; ++i) rows.push_back(int32_t(i));
        out = TDM_TRY(runner.forward({prompt.subspan(c0, n), pos, seq, rows}));
        if (sink && (logits_all || c0 + n == prompt.size()))
            for (uint32_t r = 0; r < out.n_outputs; ++r) sink(out.logits + size_t(r) * n_vocab, n_vocab);
    }
    return out;
}

}  // namespace tdm::test
