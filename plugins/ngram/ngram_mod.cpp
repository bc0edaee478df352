// SPDX-License-Identifier: Apache-2.0
// plugins/ngram/ngram_mod.cpp
#include "ngram_mod.h"

#include <algorithm>
#include <mutex>

namespace ngram {

// ---------------------------------------------------------------- pool

NgramModPool::NgramModPool(size_t n_slots)
    : size_(std::max<size_t>(1, n_slots)), slots_(new std::atomic<int32_t>[size_]) {
    for (size_t i = 0; i < size_; ++i) slots_[i].store(kEmpty, std::memory_order_relaxed);
}

uint64_t NgramModPool::hash(std::span<const int32_t> tokens) {
    uint64_t h = 0;
    for (int32_t t : tokens) h = h * kMul + uint64_t(uint32_t(t));
    return h;
}

uint64_t NgramModPool::power(uint32_t n) {
    uint64_t p = 1;
    for (uint32_t i = 1; i < n; ++i) p *= kMul;
    return p;
}

size_t NgramModPool::slot(uint64_t h) const {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return size_t(h % size_);
}

void NgramModPool::add(uint64_t h, int32_t next) {
    const int32_t old = slots_[slot(h)].exchange(next, std::memory_order_relaxed);
    if (old == kEmpty) used_.fetch_add(1, std::memory_order_relaxed);
    else if (old != next) overwrites_.fetch_add(1, std::memory_order_relaxed);
}

void NgramModPool::reset() {
    for (size_t i = 0; i < size_; ++i) slots_[i].store(kEmpty, std::memory_order_relaxed);
    used_.store(0, std::memory_order_relaxed);
    resets_.fetch_add(1, std::memory_order_relaxed);
}

namespace {
std::mutex g_pool_mutex;  // guards g_pool itself, not the slots
std::shared_ptr<NgramModPool> g_pool;
}  // namespace

std::shared_ptr<NgramModPool> ngram_mod_shared_pool() {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    if (!g_pool) g_pool = std::make_shared<NgramModPool>(kSharedPoolSlots);
    return g_pool;
}

void ngram_mod_release_shared_pool() {
    std::lock_guard<std::mutex> lock(g_pool_mutex);
    g_pool.reset();
}

// ---------------------------------------------------------------- drafter

NgramMod::NgramMod(const NgramParams& p, std::shared_ptr<NgramModPool> pool)
    : p_(p), pool_(std::move(pool)), pow_(NgramModPool::power(p.n)) {}

void NgramMod::learn(std::span<const int32_t> history) {
    const size_t n = p_.n;
    if (i_last_ > history.size()) i_last_ = 0;  // a shorter history: a new text, learn it all
    if (history.size() <= n || i_last_ + n >= history.size()) return;
    uint64_t h = NgramModPool::hash(history.subspan(i_last_, n));
    for (size_t i = i_last_;; ++i) {  // n-gram [i, i+n) -> history[i+n]
        const int32_t next = history[i + n];
        bool ok = token_ok(next, p_.n_vocab);
        for (size_t j = i; ok && j < i + n; ++j) ok = token_ok(history[j], p_.n_vocab);
        if (ok) pool_->add(h, next);
        if (i + n + 1 >= history.size()) break;
        h = NgramModPool::roll(h, history[i], next, pow_);
    }
    i_last_ = history.size() - n;
}

void NgramMod::begin(std::span<const int32_t> prompt) {
    i_last_ = 0;
    n_low_ = 0;
    // Check before learning the prompt (llama.cpp checks after, and so drops
    // the prompt it just learnt when it resets).
    if (double(pool_->used()) > kResetOccupancy * double(pool_->size())) {
        pool_->reset();
        if (p_.log)
            p_.log(TDM_LOG_INFO, "ngram_mod: the shared pool was more than a quarter full; emptied it");
    }
    learn(prompt);
}

size_t NgramMod::propose(std::span<const int32_t> history, std::span<int32_t> out) {
    learn(history);
    const size_t n = p_.n, len = history.size();
    if (len < n || out.empty()) return 0;
    const std::span<const int32_t> window = history.last(n);
    for (int32_t t : window)
        if (!token_ok(t, p_.n_vocab)) return 0;
    uint64_t h = NgramModPool::hash(window);
    size_t k = 0;
    for (; k < out.size(); ++k) {
        const int32_t t = pool_->get(h);
        if (!token_ok(t, p_.n_vocab)) break;  // kEmpty, or another model's id
        out[k] = t;
        // the oldest token of the window: position len - n + k of history + draft
        const size_t o = len - n + k;
        h = NgramModPool::roll(h, o < len ? history[o] : out[o - len], t, pow_);
    }
    return k;
}

void NgramMod::accept(std::span<const int32_t> history, size_t n_drafted, size_t n_accepted) {
    if (n_drafted > 0) {
        if (2 * n_accepted < n_drafted) {
            if (++n_low_ >= kResetLowStreak) {
                pool_->reset();
                n_low_ = 0;
                i_last_ = 0;  // relearn this sequence's own text on the next call
                if (p_.log)
                    p_.log(TDM_LOG_INFO, "ngram_mod: " + std::to_string(kResetLowStreak) +
                                             " drafts in a row with less than half accepted; emptied the pool");
            }
        } else {
            n_low_ = 0;
        }
    }
    learn(history);
}

}  // namespace ngram
