/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/ngram_simple.h: ngram-simple, llama.cpp's simplest
// self-speculative drafter: find the most recent earlier occurrence of the
// history's last n tokens and draft the m tokens that followed it. No table:
// every call scans the history backwards (O(history x n)), which is what makes
// it the drafter with the least state and the cheapest accept.
//
// Differences from llama.cpp (common/ngram-map.cpp, common_ngram_simple_draft):
// position 0 can match, and the continuation is an overlapping copy
// (token_log.h), so in a cycle shorter than n + m the draft still runs to m
// tokens (llama.cpp drafts nothing when fewer than n tokens follow the match).
// Branches (draft trees): the continuations of the key's earlier occurrences, most
// recent first, each distinct one a branch (one that repeats or extends no further than
// an earlier branch adds nothing and is skipped).
// Not here: key tables (map_k.h), hashing (ngram_mod.h).
#pragma once

#include <optional>

#include "drafter.h"
#include "params.h"

namespace ngram {

// Start of the most recent occurrence of h's last n tokens that ends before
// h's end (so at least one token follows it); nullopt if none or h.size() <= n.
std::optional<size_t> ngram_simple_find(std::span<const int32_t> h, uint32_t n);

// Writes the draft for h into out (at most min(m, out.size()) tokens).
size_t ngram_simple_draft(const NgramParams& p, std::span<const int32_t> h, std::span<int32_t> out);

// Up to lens.size() branches for h (SeqDrafter::propose_branches), each at most
// min(m, max_len) tokens; returns how many.
size_t ngram_simple_branches(const NgramParams& p, std::span<const int32_t> h, size_t max_len,
                             std::span<int32_t> tokens, std::span<uint32_t> lens);

class NgramSimple : public SeqDrafter {
public:
    explicit NgramSimple(const NgramParams& p) : p_(p) {}
    void begin(std::span<const int32_t>) override {}
    size_t propose(std::span<const int32_t> history, std::span<int32_t> out) override {
        return ngram_simple_draft(p_, history, out);
    }
    size_t propose_branches(std::span<const int32_t> history, size_t max_len, std::span<int32_t> tokens,
                            std::span<uint32_t> lens) override {
        return ngram_simple_branches(p_, history, max_len, tokens, lens);
    }
    void accept(std::span<const int32_t>, size_t, size_t) override {}

private:
    NgramParams p_;
};

}  // namespace ngram
