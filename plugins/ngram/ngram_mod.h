/* SPDX-License-Identifier: Apache-2.0 */
// plugins/ngram/ngram_mod.h: ngram-mod: a fixed-size pool mapping the hash of
// n tokens to the token that followed them, shared by every sequence of the
// process (one sequence's text helps another's drafts), and a drafter that
// walks it: hash the last n tokens, read the next token, roll the hash, repeat,
// so a draft runs as long as the pool keeps predicting (variable length).
//
// Hash: llama.cpp's LCG fold h = sum t_i * A^(n-1-i) (mod 2^64), A =
// 6364136223846793005 (common/ngram-mod.cpp), kept rolling (drop the oldest
// token, append the newest: O(1) per step instead of O(n)), then a finaliser
// picks the slot, because the fold's low bits depend only on the ids' low bits.
//
// Sharing: slots are relaxed atomics, no lock. A racing reader may see a slot
// an instant before or after another sequence's write; either value is a
// plausible guess, and every draft is verified by the target, so a race can
// cost acceptance but never correctness. Collisions overwrite (the newest
// writer wins), as in llama.cpp; nothing stores the key.
//
// Resets, as llama.cpp: the pool is emptied when begin() finds it more than a
// quarter full (collisions would dominate), and when a sequence sees three
// drafts in a row with less than half accepted (the pool predicts a text that
// is no longer being written). Not here: exact keys (map_k.h).
#pragma once

#include <atomic>
#include <memory>

#include "drafter.h"
#include "params.h"

namespace ngram {

class NgramModPool {
public:
    static constexpr int32_t kEmpty = -1;
    static constexpr uint64_t kMul = 6364136223846793005ull;

    explicit NgramModPool(size_t n_slots);
    NgramModPool(const NgramModPool&) = delete;
    NgramModPool& operator=(const NgramModPool&) = delete;

    // The hash of n tokens (the fold), and its update when the window slides
    // by one: `pow` = kMul^(n-1) (power()) removes the oldest token.
    static uint64_t hash(std::span<const int32_t> tokens);
    static uint64_t roll(uint64_t h, int32_t oldest, int32_t newest, uint64_t pow) {
        return (h - uint64_t(uint32_t(oldest)) * pow) * kMul + uint64_t(uint32_t(newest));
    }
    static uint64_t power(uint32_t n);

    size_t slot(uint64_t h) const;
    void add(uint64_t h, int32_t next);
    int32_t get(uint64_t h) const { return slots_[slot(h)].load(std::memory_order_relaxed); }
    void reset();

    size_t size() const { return size_; }
    size_t bytes() const { return size_ * sizeof(int32_t); }
    size_t used() const { return used_.load(std::memory_order_relaxed); }          // occupied slots
    uint64_t overwrites() const { return overwrites_.load(std::memory_order_relaxed); }  // a slot's token replaced
    uint64_t resets() const { return resets_.load(std::memory_order_relaxed); }

private:
    size_t size_;
    std::unique_ptr<std::atomic<int32_t>[]> slots_;
    std::atomic<size_t> used_{0};
    std::atomic<uint64_t> overwrites_{0}, resets_{0};
};

// The process-wide pool: 4 Mi slots (16 MiB), created on first use and kept
// until ngram_mod_release_shared_pool() (plugin shutdown); drafters hold a
// reference, so releasing it while one is alive is safe.
constexpr size_t kSharedPoolSlots = size_t(4) << 20;
std::shared_ptr<NgramModPool> ngram_mod_shared_pool();
void ngram_mod_release_shared_pool();

class NgramMod : public SeqDrafter {
public:
    NgramMod(const NgramParams& p, std::shared_ptr<NgramModPool> pool);

    void begin(std::span<const int32_t> prompt) override;
    size_t propose(std::span<const int32_t> history, std::span<int32_t> out) override;
    void accept(std::span<const int32_t> history, size_t n_drafted, size_t n_accepted) override;

    const NgramModPool& pool() const { return *pool_; }
    static constexpr double kResetOccupancy = 0.25;
    static constexpr int kResetLowStreak = 3;

private:
    // Adds the n-grams of history that end before its last token, from i_last_.
    void learn(std::span<const int32_t> history);

    NgramParams p_;
    std::shared_ptr<NgramModPool> pool_;
    uint64_t pow_;          // kMul^(n-1)
    size_t i_last_ = 0;     // n-grams starting before this were added
    int n_low_ = 0;         // drafts in a row with less than half accepted
};

}  // namespace ngram
