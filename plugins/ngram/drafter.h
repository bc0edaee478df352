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
    // The last proposal was verified: n_accepted of n_drafted tokens kept
    // (n_drafted = 0: another drafter or a plain step made this round).
    // `history` ends with the accepted drafts and the target's token.
    virtual void accept(std::span<const int32_t> history, size_t n_drafted, size_t n_accepted) = 0;
    // Persists what should outlive the process; false with *err on failure.
    virtual bool save(std::string* err) { return true; }
};

}  // namespace ngram
