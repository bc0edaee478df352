// SPDX-License-Identifier: Apache-2.0
// host/kv/kv_transfer.cpp: KvPool::export_sequence / import_sequence, the
// layout-independent byte form of one sequence (saved sequence states, prompt
// caches). A sequence's rows of one layer sit in whole blocks scattered over the
// layer's buffer (a sliding-window layer's in its ring); the byte form lists them
// in position order, so a file loads into a pool of any block size, block count or
// ring size. A windowed layer contributes only its last window of positions.
#include <algorithm>
#include <cstring>

#include "graph/weight.h"
#include "kv/kv_pool.h"
#include "vk/recorder.h"

namespace tdm {

namespace {

// Device ranges in stream order, moved through one staging buffer: many copies
// per submission, so a long sequence costs a few submissions, not one per block.
constexpr uint64_t kStagingBytes = 32ull << 20;

std::vector<vk::BufferSlice> split(std::vector<vk::BufferSlice> segments) {
    std::vector<vk::BufferSlice> out;
    for (const vk::BufferSlice& s : segments)
        for (uint64_t off = 0; off < s.size; off += kStagingBytes)
            out.push_back(s.sub(off, std::min(kStagingBytes, s.size - off)));
    return out;
}

Status read_segments(vk::Device& device, const std::vector<vk::BufferSlice>& segments, const KvPool::ByteSink& sink) {
    std::unique_ptr<vk::Buffer> staging;
    std::unique_ptr<vk::CommandBuffer> cb;
    size_t i = 0;
    while (i < segments.size()) {
        if (const uint8_t* p = segments[i].mapped()) {  // host-visible memory: no copy
            TDM_TRY(sink(p, segments[i].size));
            ++i;
            continue;
        }
        if (!staging) {
            staging = TDM_TRY(vk::Buffer::create(device, kStagingBytes, vk::MemoryKind::host, "KV export staging"));
            cb = TDM_TRY(vk::CommandBuffer::create(device));
        }
        TDM_TRY(cb->begin());
        const size_t first = i;
        uint64_t used = 0;
        while (i < segments.size() && !segments[i].mapped() && used + segments[i].size <= kStagingBytes) {
            cb->record_copy(segments[i], {staging.get(), used, segments[i].size}, segments[i].size);
            used += segments[i].size;
            ++i;
        }
        cb->record_host_barrier();
        TDM_TRY(cb->end());
        TDM_TRY(cb->submit_and_wait());
        used = 0;
        for (size_t j = first; j < i; ++j) {
            TDM_TRY(sink(staging->mapped() + used, segments[j].size));
            used += segments[j].size;
        }
    }
    return {};
}

Status write_segments(vk::Device& device, const std::vector<vk::BufferSlice>& segments,
                      const KvPool::ByteSource& source) {
    std::unique_ptr<vk::Buffer> staging;
    std::unique_ptr<vk::CommandBuffer> cb;
    size_t i = 0;
    while (i < segments.size()) {
        if (uint8_t* p = segments[i].mapped()) {
            TDM_TRY(source(p, segments[i].size));
            ++i;
            continue;
        }
        if (!staging) {
            staging = TDM_TRY(vk::Buffer::create(device, kStagingBytes, vk::MemoryKind::host, "KV import staging"));
            cb = TDM_TRY(vk::CommandBuffer::create(device));
        }
        TDM_TRY(cb->begin());
        uint64_t used = 0;
        while (i < segments.size() && !segments[i].mapped() && used + segments[i].size <= kStagingBytes) {
            TDM_TRY(source(staging->mapped() + used, segments[i].size));
            cb->record_copy({staging.get(), used, segments[i].size}, segments[i], segments[i].size);
            used += segments[i].size;
            ++i;
        }
        cb->record_barrier();  // later passes read what the copies wrote
        TDM_TRY(cb->end());
        TDM_TRY(cb->submit_and_wait());
    }
    return {};
}

}  // namespace

uint64_t KvPool::k_row_bytes(uint32_t i) const {
    const KvLayerBinding& l = layers_[i];
    return uint64_t(l.n_kv_head) * l.dk * (l.f16 ? 2 : 4);
}

uint64_t KvPool::v_row_bytes(uint32_t i) const {
    const KvLayerBinding& l = layers_[i];
    return uint64_t(l.n_kv_head) * l.dv * (l.f16 ? 2 : 4);
}

uint32_t KvPool::export_rows(uint32_t i, uint32_t n) const {
    const uint32_t w = layers_[i].window;
    return w ? std::min(n, w) : n;
}

uint64_t KvPool::sequence_bytes(uint32_t n) const {
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < n_layers(); ++i) bytes += uint64_t(export_rows(i, n)) * (k_row_bytes(i) + v_row_bytes(i));
    for (const StateBinding& s : states_) bytes += s.n_f32 * 4;
    return bytes;
}

// The device ranges holding the exported positions of `seq` (each layer's last
// export_rows(il, n) of [0, n)), in export order.
static std::vector<vk::BufferSlice> sequence_segments(const KvPool& pool, uint32_t n, int32_t seq, int32_t checkpoint) {
    std::vector<vk::BufferSlice> segs;
    const uint32_t bs = pool.config().block_size;
    for (uint32_t il = 0; il < pool.n_layers(); ++il) {
        const KvLayerBinding* l = pool.layer(il);
        const uint32_t first = n - pool.export_rows(il, n);
        for (const auto& [slice, row] : {std::pair{l->k, pool.k_row_bytes(il)}, std::pair{l->v, pool.v_row_bytes(il)}})
            for (uint32_t p = first; p < n;) {
                // the rest of position p's block (a ring's blocks wrap: one range per block)
                const uint32_t b = p / bs, in_block = p % bs;
                const uint32_t rows = std::min(bs - in_block, n - p);
                const uint64_t slot = uint64_t(pool.block_id(seq, il, b)) * bs + in_block;
                const vk::BufferSlice s = slice.sub(slot * row, uint64_t(rows) * row);
                // consecutive blocks (the usual case in a fresh pool) make one range
                if (!segs.empty() && segs.back().buffer == s.buffer && segs.back().offset + segs.back().size == s.offset)
                    segs.back().size += s.size;
                else
                    segs.push_back(s);
                p += rows;
            }
    }
    for (uint32_t i = 0; i < pool.n_states(); ++i) {
        const StateBinding* sb = pool.state(i);
        const uint64_t bytes = sb->n_f32 * 4;
        segs.push_back(sb->buffer.sub((uint64_t(seq) * sb->n_checkpoints + uint64_t(checkpoint)) * bytes, bytes));
    }
    return split(std::move(segs));
}

Status KvPool::export_sequence(int seq, uint32_t n, const ByteSink& sink) const {
    if (seq < 0 || size_t(seq) >= live_.size() || !live_[size_t(seq)])
        return Error::format("{}: sequence {} is not live", name_, seq);
    if (n > reserved_tokens(seq))
        return Error::format("{}: sequence {} holds {} positions, not {}", name_, seq, reserved_tokens(seq), n);
    if (!states_.empty() && state_length(seq) != n)
        return Error::format("{}: the recurrent state of sequence {} has seen {} tokens, not {}", name_, seq,
                             state_length(seq), n);
    if (const int32_t l = windows_missing(seq, n, std::max(n, stored_[size_t(seq)]), true); l >= 0)
        return Error::format("{}: cannot save sequence {} at {} tokens: {}", name_, seq, n,
                             ring_message(seq, l, n, stored_[size_t(seq)]));
    return read_segments(device_, sequence_segments(*this, n, seq, cur_[size_t(seq)]), sink);
}

Status KvPool::import_sequence(int seq, uint32_t n, const ByteSource& source) {
    if (seq < 0 || size_t(seq) >= live_.size() || !live_[size_t(seq)])
        return Error::format("{}: sequence {} is not live", name_, seq);
    TDM_TRY(truncate(seq, 0));
    Status st = reserve(seq, n);
    if (st.ok())
        st = write_segments(device_, sequence_segments(*this, n, seq, cur_[size_t(seq)]), source);
    if (!st.ok()) {
        (void)truncate(seq, 0);
        return st;
    }
    if (!states_.empty()) ckpt_len_[size_t(seq)][size_t(cur_[size_t(seq)])] = n;
    stored_[size_t(seq)] = imported_[size_t(seq)] = n;
    return {};
}

}  // namespace tdm
