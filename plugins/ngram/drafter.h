/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/drafter.h: the C++ face of one drafter object (one per
// sequence), mirroring tdm_drafter_desc's begin/propose/accept/save. plugin.cpp
// turns it into the C callbacks; the unit tests drive it directly. Not here:
// the C ABI glue, exception fencing, options parsing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ngram {

class SeqDrafter {
public:
    virtual ~SeqDrafter() = default;
    // A new sequence starts with this prompt (forget the previous sequence).
    virtual void begin(std::span<const int32_t> prompt) = 0;
    // Up to out.size() tokens to follow `history` (prompt + accepted tokens);
    // returns how many were written (0 = no proposal).
    virtual size_t propose(std::span<const int32_t> history, std::span<int32_t> out) = 0;
    // Several continuations of `history`, best first (tandem/ext/drafter_branches.h):
    // branch b in tokens[b * max_len, ...), its length in lens[b]; at most lens.size()
    // branches; returns how many. The first is the chain propose() would give (cut to
    // max_len). Drafters whose table knows one continuation keep this default.
    virtual size_t propose_branches(std::span<const int32_t> history, size_t max_len, std::span<int32_t> tokens,
                                    std::span<uint32_t> lens) {
        if (lens.empty() || max_len == 0) return 0;
        lens[0] = uint32_t(propose(history, tokens.first(max_len)));
        return lens[0] ? 1 : 0;
    }
    // The last proposal was verified: n_accepted of n_drafted tokens kept
    // (n_drafted = 0: another drafter or a plain step made this round).
    // `history` ends with the accepted drafts and the target's token.
    virtual void accept(std::span<const int32_t> history, size_t n_drafted, size_t n_accepted) = 0;
    // Persists what should outlive the process; false with *err on failure.
    virtual bool save(std::string* err) { return true; }
};

}  // namespace ngram
