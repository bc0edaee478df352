/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/bpe.h: rank-ordered BPE merging over token ids, shared by byte-level BPE
// (Qwen, §3.3) and SentencePiece-style BPE (Gemma 3 HF, GGUF "gemma4", §4.2/§4.4).
// Not here: building the initial symbols (byte map or byte fallback) - tokenizer.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tdm {

// (left id, right id) -> (rank, merged id), open addressing: built once per vocabulary
// (Gemma 3 has 514,906 merges) and probed for every adjacent pair during encoding.
class MergeTable {
public:
    struct Merge {
        int32_t rank;
        int32_t result;
    };

    void reserve(size_t n_merges);
    // Returns false if the pair is already present (the first, lower rank, is kept).
    bool insert(int32_t left, int32_t right, Merge m);
    const Merge* find(int32_t left, int32_t right) const;
    size_t size() const { return size_; }

private:
    static uint64_t key(int32_t l, int32_t r) {
        return (static_cast<uint64_t>(static_cast<uint32_t>(l)) << 32) | static_cast<uint32_t>(r);
    }
    void grow();
    std::vector<uint64_t> keys_;  // kEmpty where unused
    std::vector<Merge> values_;
    size_t size_ = 0;
    size_t mask_ = 0;
};

// Reusable buffers for bpe_merge, so that encoding many pieces allocates once.
struct BpeScratch {
    struct Symbol {
        int32_t id;
        int32_t prev;
        int32_t next;
        bool alive;
    };
    struct Candidate {
        int32_t rank;
        int32_t pos;     // index of the left symbol; ties go to the smaller (leftmost)
        int32_t result;
    };
    std::vector<Symbol> symbols;
    std::vector<Candidate> heap;
};

// Merges `ids` in place: repeatedly the adjacent pair with the lowest rank, leftmost
// first, until no adjacent pair has a merge. A port of HF tokenizers' Word::merge_all
// (models/bpe/word.rs), including its rule for skipping stale queue entries.
void bpe_merge(const MergeTable& merges, std::vector<int32_t>& ids, BpeScratch& scratch);

}  // namespace tdm
