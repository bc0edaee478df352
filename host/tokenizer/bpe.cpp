// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/bpe.cpp: MergeTable and the priority-queue BPE merge loop.
#include "tokenizer/bpe.h"

#include <algorithm>

namespace tdm {

namespace {
constexpr uint64_t kEmpty = ~uint64_t{0};  // no real key: ids are below 2^31

size_t hash_key(uint64_t k) {
    k ^= k >> 33;  // murmur3 finaliser: ids are dense, so spread the bits
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
}
}  // namespace

void MergeTable::reserve(size_t n_merges) {
    size_t cap = 16;
    while (cap < n_merges * 2) cap <<= 1;  // load factor <= 0.5
    if (cap <= keys_.size()) return;
    std::vector<uint64_t> old_keys = std::move(keys_);
    std::vector<Merge> old_values = std::move(values_);
    keys_.assign(cap, kEmpty);
    values_.assign(cap, Merge{0, 0});
    mask_ = cap - 1;
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
        if (old_keys[i] == kEmpty) continue;
        size_t h = hash_key(old_keys[i]) & mask_;
        while (keys_[h] != kEmpty) h = (h + 1) & mask_;
        keys_[h] = old_keys[i];
        values_[h] = old_values[i];
        ++size_;
    }
}

void MergeTable::grow() { reserve(std::max<size_t>(16, size_ * 2 + 2)); }

bool MergeTable::insert(int32_t left, int32_t right, Merge m) {
    if ((size_ + 1) * 2 > keys_.size()) grow();
    uint64_t k = key(left, right);
    size_t h = hash_key(k) & mask_;
    while (keys_[h] != kEmpty) {
        if (keys_[h] == k) return false;
        h = (h + 1) & mask_;
    }
    keys_[h] = k;
    values_[h] = m;
    ++size_;
    return true;
}

const MergeTable::Merge* MergeTable::find(int32_t left, int32_t right) const {
    if (size_ == 0) return nullptr;
    uint64_t k = key(left, right);
    size_t h = hash_key(k) & mask_;
    while (keys_[h] != kEmpty) {
        if (keys_[h] == k) return &values_[h];
        h = (h + 1) & mask_;
    }
    return nullptr;
}

void bpe_merge(const MergeTable& merges, std::vector<int32_t>& ids, BpeScratch& s) {
    if (ids.size() < 2) return;
    using Candidate = BpeScratch::Candidate;
    // std heap functions build a max-heap: "less" means lower priority, i.e. a higher
    // rank, or the same rank further right.
    auto lower_priority = [](const Candidate& a, const Candidate& b) {
        return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
    };
    const int32_t n = static_cast<int32_t>(ids.size());
    s.symbols.resize(ids.size());
    s.heap.clear();
    for (int32_t i = 0; i < n; ++i) s.symbols[i] = {ids[i], i - 1, i + 1 < n ? i + 1 : -1, true};
    for (int32_t i = 0; i + 1 < n; ++i)
        if (const auto* m = merges.find(ids[i], ids[i + 1])) s.heap.push_back({m->rank, i, m->result});
    std::make_heap(s.heap.begin(), s.heap.end(), lower_priority);

    auto push = [&](int32_t pos, int32_t left, int32_t right) {
        if (const auto* m = merges.find(left, right)) {
            s.heap.push_back({m->rank, pos, m->result});
            std::push_heap(s.heap.begin(), s.heap.end(), lower_priority);
        }
    };
    while (!s.heap.empty()) {
        std::pop_heap(s.heap.begin(), s.heap.end(), lower_priority);
        Candidate top = s.heap.back();
        s.heap.pop_back();
        auto& left = s.symbols[top.pos];
        if (!left.alive || left.next < 0) continue;
        auto& right = s.symbols[left.next];
        // Stale entry: the pair at this position changed since it was queued.
        const auto* m = merges.find(left.id, right.id);
        if (!m || m->result != top.result) continue;
        left.id = top.result;
        right.alive = false;
        left.next = right.next;
        if (right.next >= 0) s.symbols[right.next].prev = top.pos;
        if (left.prev >= 0) push(left.prev, s.symbols[left.prev].id, left.id);
        if (left.next >= 0) push(top.pos, left.id, s.symbols[left.next].id);
    }
    ids.clear();
    for (int32_t i = 0; i >= 0; i = s.symbols[i].next) ids.push_back(s.symbols[i].id);
}

}  // namespace tdm
