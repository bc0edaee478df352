/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/draft_vocab.h: the automatic reduced draft vocabulary of draft heads.
//
// A head's step ends in the LM head, which for a large vocabulary is most of the
// step (Qwen3.5-0.8B: 248,320 ids, about 70% of an MTP step). Draft logits over
// only the first N ids change a draft only when the token the full head would
// have drafted has an id of N or more: restricting an argmax to a subset that
// holds the maximum gives the same token. So the acceptance lost is at most the
// share of such tokens in what the target emits. That share is measured on the
// sequence's own recent tokens (prompt and output): the smallest N of a fixed
// ladder whose share of misses is at most `max_miss` wins. Where ids follow
// frequency (BPE merge order: Qwen's vocabularies on English and code) a small N
// qualifies; where they do not (Chinese, Russian, or a vocabulary not in
// frequency order) the whole vocabulary stays. docs/perf-notes/draft-vocabulary.md
// has the shares measured on real text.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tdm {

struct DraftVocabPolicy {
    uint32_t window = 1024;    // most recent tokens of the sequence looked at
    uint32_t min_tokens = 64;  // with fewer tokens than this: the whole vocabulary
    double max_miss = 0.05;    // largest share of those tokens outside the prefix
    uint32_t smallest = 4096;  // the smallest prefix tried
};

// The prefixes tried, smallest first: `smallest` times 1, 1.5, 2, 3, 4, 6, ...
// (half-octave steps), those below n_vocab.
std::vector<uint32_t> draft_vocab_ladder(uint32_t n_vocab, uint32_t smallest);

// The draft vocabulary for a sequence whose tokens so far are `history`: a prefix
// size from draft_vocab_ladder(), or 0 for the whole vocabulary.
uint32_t choose_draft_vocab(std::span<const int32_t> history, uint32_t n_vocab, const DraftVocabPolicy& policy);

}  // namespace tdm
