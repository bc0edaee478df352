// SPDX-License-Identifier: Apache-2.0
// host/kv/kv_pool.cpp
#include "kv/kv_pool.h"

#include "vk/recorder.h"

#include <algorithm>
#include <cstring>
#include <map>

#include "graph/weight.h"

namespace tdm {

namespace {
constexpr uint32_t kNoLength = 0xffffffffu;
}

Result<std::unique_ptr<KvPool>> KvPool::create(vk::Device& device, std::span<const tdm_attention_layer> layers,
                                               const KvPoolConfig& config, std::string name,
                                               std::span<const tdm_recurrent_state> states) {
    std::unique_ptr<KvPool> pool(new KvPool(device));
    pool->config_ = config;
    pool->name_ = std::move(name);
    pool->layout_ = TDM_TRY(plan_kv_layout(layers, states, config));
    const KvLayout& lay = pool->layout_;
    const uint64_t es = config.f16 ? 2 : 4;
    pool->n_blocks_ = lay.n_blocks;
    pool->max_blocks_ = lay.max_blocks;

    auto alloc = [&](uint64_t size, vk::MemoryKind kind, const std::string& what) -> Result<vk::BufferSlice> {
        auto b = TDM_TRY(vk::Buffer::create(device, size, kind, fmt::format("{} of {}", what, pool->name_)));
        pool->buffers_.push_back(std::move(b));
        pool->bytes_ += size;
        return vk::BufferSlice{pool->buffers_.back().get(), 0, size};
    };
    // The table is written by the host between steps and read by every attention and
    // kv_store dispatch: in device memory, written by the host through the mapping where
    // there is one, else in a host copy that each graph copies to the device at its start
    // (vk::staged_io).
    const uint64_t table_bytes = uint64_t(config.n_seq_max) * pool->max_blocks_ * 4;
    pool->table_ = TDM_TRY(alloc(table_bytes, vk::MemoryKind::device, "KV block table"));
    if (vk::staged_io(device)) {
        // host memory, outside the pool's device-memory plan (KvLayout::total_bytes)
        pool->buffers_.push_back(TDM_TRY(vk::Buffer::create(device, table_bytes, vk::MemoryKind::host,
                                                            fmt::format("KV block table of {} (host copy)", pool->name_))));
        pool->table_host_ = {pool->buffers_.back().get(), 0, table_bytes};
        std::memset(pool->table_host_.mapped(), 0, table_bytes);
    }
    TDM_TRY(write_device(device, pool->table_, table_bytes, 4,
                         [](uint8_t* p, uint64_t, uint64_t n) { std::memset(p, 0, n); }));
    // a ring's table never changes: sequence slot s owns blocks [s * R, (s + 1) * R) of
    // each ring layer of R blocks per sequence (one table per ring size)
    std::map<uint32_t, vk::BufferSlice> ring_tables;
    for (uint32_t r : lay.ring_blocks) {
        if (!r || ring_tables.count(r)) continue;
        const uint64_t bytes = uint64_t(config.n_seq_max) * r * 4;
        vk::BufferSlice t = TDM_TRY(alloc(bytes, vk::MemoryKind::device, fmt::format("KV ring table ({} blocks)", r)));
        TDM_TRY(write_device(device, t, bytes, 4, [](uint8_t* p, uint64_t off, uint64_t n) {
            int32_t* ids = reinterpret_cast<int32_t*>(p);
            for (uint64_t i = 0; i < n / 4; ++i) ids[i] = int32_t(off / 4 + i);
        }));
        ring_tables.emplace(r, t);
        pool->has_rings_ = true;
    }

    for (size_t il = 0; il < layers.size(); ++il) {
        const auto& l = layers[il];
        const uint32_t ring = lay.ring_blocks[il];
        const uint64_t blocks = ring ? uint64_t(config.n_seq_max) * ring : pool->n_blocks_;
        KvLayerBinding b;
        const uint64_t kbytes = blocks * config.block_size * l.n_kv_head * l.head_dim_k * es;
        const uint64_t vbytes = blocks * config.block_size * l.n_kv_head * l.head_dim_v * es;
        b.k = TDM_TRY(alloc(kbytes, vk::MemoryKind::device, fmt::format("K of layer {}", il)));
        b.v = TDM_TRY(alloc(vbytes, vk::MemoryKind::device, fmt::format("V of layer {}", il)));
        b.f16 = config.f16;
        b.n_kv_head = l.n_kv_head;
        b.dk = l.head_dim_k;
        b.dv = l.head_dim_v;
        b.block_size = config.block_size;
        b.max_blocks = ring ? ring : pool->max_blocks_;
        b.block_table = ring ? ring_tables.at(ring) : pool->table_;
        if (!ring) b.block_table_source = pool->table_host_;
        b.ring_blocks = ring;
        b.window = l.window;
        b.name = fmt::format("{} layer {}", pool->name_, il);
        if (device.caps().prefer_texel_weights) {
            for (vk::BufferSlice* s : {&b.k, &b.v}) {
                if (s->size / 16 > device.caps().max_texel_buffer_elements) continue;  // storage path then
                VkBufferViewCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
                ci.buffer = s->handle();
                ci.format = config.f16 ? VK_FORMAT_R16G16B16A16_SFLOAT : VK_FORMAT_R32G32B32A32_SFLOAT;
                ci.offset = s->offset;
                ci.range = s->size;
                VkBufferView view = VK_NULL_HANDLE;
                TDM_VK_CHECK(device.fn().vkCreateBufferView(device.handle(), &ci, nullptr, &view), "KV texel view");
                pool->views_.push_back(view);
                (s == &b.k ? b.k_view : b.v_view) = view;
            }
            if (!b.k_view || !b.v_view) b.k_view = b.v_view = VK_NULL_HANDLE;
        }
        pool->layers_.push_back(std::move(b));
    }
    if (!states.empty() && config.n_checkpoints < 2)
        return Error("KV pool: recurrent states need at least 2 checkpoints per sequence");
    for (size_t i = 0; i < states.size(); ++i) {
        if (states[i].n_f32 == 0) return Error::format("KV pool: recurrent state {} is empty", i);
        StateBinding sb;
        sb.n_f32 = states[i].n_f32;
        sb.n_checkpoints = config.n_checkpoints;
        const uint64_t bytes = uint64_t(config.n_seq_max) * config.n_checkpoints * states[i].n_f32 * 4;
        if (bytes > device.caps().max_storage_buffer_range)
            return Error::format("KV pool: recurrent state {} needs {} ({} checkpoints), more than one binding holds "
                                 "({}); lower --draft-max",
                                 i, vk::format_bytes(bytes), config.n_checkpoints,
                                 vk::format_bytes(device.caps().max_storage_buffer_range));
        sb.buffer = TDM_TRY(alloc(bytes, vk::MemoryKind::device, fmt::format("recurrent state {}", i)));
        sb.name = fmt::format("{} state {}", pool->name_, i);
        pool->state_bytes_ += bytes;
        pool->states_.push_back(std::move(sb));
    }
    pool->cur_.assign(config.n_seq_max, 0);
    pool->ckpt_len_.assign(config.n_seq_max, std::vector<uint32_t>(config.n_checkpoints, kNoLength));
    pool->keep_from_.assign(config.n_seq_max, kNoLength);
    pool->free_.reserve(pool->n_blocks_);
    pool->refs_.assign(pool->n_blocks_, 0);
    for (uint32_t i = pool->n_blocks_; i-- > 0;) pool->free_.push_back(i);  // pop_back gives 0, 1, 2, ...
    pool->seq_blocks_.resize(config.n_seq_max);
    pool->live_.assign(config.n_seq_max, false);
    pool->stored_.assign(config.n_seq_max, 0);
    pool->imported_.assign(config.n_seq_max, 0);
    TDM_ASSERT(pool->bytes_ == lay.total_bytes());
    return pool;
}

KvPool::~KvPool() {
    for (VkBufferView v : views_) device_.fn().vkDestroyBufferView(device_.handle(), v, nullptr);
}

Status KvPool::zero_states(int seq) {
    cur_[seq] = 0;
    keep_from_[size_t(seq)] = kNoLength;
    std::fill(ckpt_len_[seq].begin(), ckpt_len_[seq].end(), kNoLength);
    ckpt_len_[seq][0] = 0;
    for (const StateBinding& sb : states_) {
        const uint64_t bytes = sb.n_f32 * 4;
        const vk::BufferSlice slot = sb.buffer.sub(uint64_t(seq) * sb.n_checkpoints * bytes, bytes);
        TDM_TRY(write_device(device_, slot, bytes, 4, [](uint8_t* dst, uint64_t, uint64_t n) { std::memset(dst, 0, n); }));
    }
    return {};
}

Result<int> KvPool::add_sequence() {
    for (size_t s = 0; s < live_.size(); ++s)
        if (!live_[s]) {
            live_[s] = true;
            seq_blocks_[s].clear();
            stored_[s] = imported_[s] = 0;
            if (!states_.empty()) TDM_TRY(zero_states(int(s)));
            return int(s);
        }
    return Error::format("KV pool of {}: all {} sequence slots are in use", name_, live_.size());
}

void KvPool::free_sequence(int seq) {
    TDM_ASSERT(seq >= 0 && size_t(seq) < live_.size());
    auto& blocks = seq_blocks_[seq];
    while (!blocks.empty()) {
        release(blocks.back());
        blocks.pop_back();
    }
    live_[seq] = false;
}

Status KvPool::write_table_row(int seq) {
    // graphs copy the host copy to the device at their start; without one the table is mapped
    uint8_t* table = table_host_ ? table_host_.mapped() : table_.mapped();
    int32_t* row = reinterpret_cast<int32_t*>(table) + size_t(seq) * max_blocks_;
    const auto& blocks = seq_blocks_[seq];
    std::memcpy(row, blocks.data(), blocks.size() * 4);
    return {};
}

Status KvPool::reserve(int seq, uint32_t n_tokens) {
    TDM_ASSERT(seq >= 0 && size_t(seq) < live_.size() && live_[seq]);
    const uint32_t need = (n_tokens + config_.block_size - 1) / config_.block_size;
    auto& blocks = seq_blocks_[seq];
    if (need <= blocks.size()) return {};
    if (need > max_blocks_)
        return Error::format("KV cache full: {} tokens do not fit the context of {} tokens (raise the context "
                             "length with -c/--ctx-size or [model] n_ctx)",
                             n_tokens, capacity_tokens());
    if (need - blocks.size() > free_.size())
        return Error::format("KV cache full: {} more blocks of {} tokens needed, {} free (raise [model] kv_memory or "
                             "the context length)",
                             need - blocks.size(), config_.block_size, free_.size());
    while (blocks.size() < need) {
        blocks.push_back(int32_t(free_.back()));
        refs_[free_.back()] = 1;
        free_.pop_back();
    }
    return write_table_row(seq);
}

Status KvPool::truncate(int seq, uint32_t n_tokens) {
    TDM_ASSERT(seq >= 0 && size_t(seq) < live_.size());
    if (n_tokens == 0) {
        stored_[size_t(seq)] = imported_[size_t(seq)] = 0;
    } else if (const int32_t l = windows_missing(seq, n_tokens, stored_[size_t(seq)], false); l >= 0) {
        return Error::format("{}: cannot roll sequence {} back to {} tokens: {}", name_, seq, n_tokens,
                             ring_message(seq, l, n_tokens, stored_[size_t(seq)]));
    }
    if (!states_.empty()) {
        // the checkpoint of exactly this length becomes current
        if (n_tokens == 0) {
            TDM_TRY(zero_states(seq));
        } else {
            const auto& lens = ckpt_len_[seq];
            int found = -1;
            for (size_t c = 0; c < lens.size(); ++c)
                if (lens[c] == n_tokens) found = int(c);
            if (found < 0)
                return Error::format("{}: no recurrent-state checkpoint of sequence {} holds length {} (current {}): "
                                     "cannot roll back that far",
                                     name_, seq, n_tokens, lens[size_t(cur_[seq])]);
            cur_[seq] = found;
            // longer checkpoints hold rows that were just rolled back
            for (uint32_t& len : ckpt_len_[seq])
                if (len != kNoLength && len > n_tokens) len = kNoLength;
        }
    }
    const uint32_t keep = (n_tokens + config_.block_size - 1) / config_.block_size;
    auto& blocks = seq_blocks_[seq];
    while (blocks.size() > keep) {
        release(blocks.back());
        blocks.pop_back();
    }
    return {};
}

bool KvPool::can_truncate(int seq, uint32_t n_tokens) const {
    if (seq < 0 || size_t(seq) >= live_.size() || !live_[size_t(seq)]) return false;
    if (n_tokens == 0) return true;
    if (windows_missing(seq, n_tokens, stored_[size_t(seq)], false) >= 0) return false;
    if (states_.empty()) return true;
    for (uint32_t len : ckpt_len_[size_t(seq)])
        if (len == n_tokens) return true;
    return false;
}

uint32_t checkpoints_that_fit(std::span<const tdm_recurrent_state> states, uint32_t n_seq, uint64_t max_binding,
                              uint32_t want) {
    uint64_t fit = want;
    for (const tdm_recurrent_state& st : states) {
        const uint64_t per_checkpoint = uint64_t(std::max(1u, n_seq)) * st.n_f32 * 4;
        if (per_checkpoint > 0) fit = std::min(fit, max_binding / per_checkpoint);
    }
    if (states.empty()) return want;
    return fit < 2 ? 0 : uint32_t(fit);
}

Result<StatePlan> KvPool::plan_states(int seq, uint32_t first_pos, uint32_t n,
                                      const std::function<bool(uint32_t row)>& checkpointed) const {
    StatePlan p;
    p.first_pos = first_pos;
    p.read = cur_[seq];
    const uint32_t have = ckpt_len_[seq][size_t(p.read)];
    if (have != first_pos)
        return Error::format("{}: the recurrent state of sequence {} has seen {} tokens but the batch starts at "
                             "position {} (states cannot skip or repeat positions)",
                             name_, seq, have, first_pos);
    p.write.assign(n, -1);
    if (n == 0) return p;
    // the checkpoints it may write: not the one it reads, nor one whose length is kept
    const int32_t S = int32_t(config_.n_checkpoints);
    const auto writable = [&](int32_t c) {
        const uint32_t len = ckpt_len_[seq][size_t(c)];
        return c != p.read && (len == kNoLength || len < keep_from_[seq]);
    };
    uint32_t n_free = 0;
    for (int32_t c = 0; c < S; ++c) n_free += writable(c);
    if (n_free == 0)
        return Error::format("{}: every recurrent-state checkpoint of sequence {} holds a state kept for a rollback "
                             "(lengths from {} on): none is left for the batch at position {}",
                             name_, seq, keep_from_[seq], first_pos);
    const auto wanted = [&](uint32_t i) { return i + 1 == n || !checkpointed || checkpointed(i); };
    uint32_t count = 0;
    for (uint32_t i = 0; i < n; ++i) count += wanted(i);
    const bool all_fit = count <= n_free;
    int32_t next = -1;  // the lowest writable checkpoint after the last one taken
    for (uint32_t i = 0; i < n; ++i) {
        if (!(i + 1 == n || (all_fit && wanted(i)))) continue;  // a long prefill chunk: its final state only
        do ++next; while (!writable(next));
        p.write[i] = next;
    }
    return p;
}

void KvPool::keep_states_from(int seq, uint32_t length) {
    if (seq >= 0 && size_t(seq) < keep_from_.size()) keep_from_[size_t(seq)] = length;
}

void KvPool::release_states(int seq) { keep_states_from(seq, kNoLength); }

void KvPool::commit_states(int seq, const StatePlan& p) {
    for (size_t i = 0; i < p.write.size(); ++i)
        if (p.write[i] >= 0) {
            ckpt_len_[seq][size_t(p.write[i])] = p.first_pos + uint32_t(i) + 1;
            cur_[seq] = p.write[i];
        }
}

void KvPool::abandon_states(int seq, const StatePlan& p) {
    for (int32_t w : p.write)
        if (w >= 0) ckpt_len_[seq][size_t(w)] = kNoLength;
    cur_[seq] = p.read;
}

uint32_t KvPool::state_length(int seq) const { return ckpt_len_[seq][size_t(cur_[seq])]; }

Result<std::vector<float>> KvPool::read_state(int seq, uint32_t index) const {
    if (seq < 0 || size_t(seq) >= live_.size() || index >= states_.size())
        return Error::format("{}: no recurrent state {} of sequence {}", name_, index, seq);
    const StateBinding& sb = states_[index];
    const uint64_t bytes = sb.n_f32 * 4;
    std::vector<float> out(sb.n_f32);
    const uint64_t slot = uint64_t(seq) * sb.n_checkpoints + uint64_t(cur_[seq]);
    TDM_TRY(read_device(device_, sb.buffer.sub(slot * bytes, bytes), out.data(), bytes));
    return out;
}

Status KvPool::begin_batch(int seq, uint32_t first, uint32_t last) {
    TDM_ASSERT(seq >= 0 && size_t(seq) < live_.size() && live_[size_t(seq)] && first <= last);
    if (has_rings_ && last - first >= config_.rows_max)
        return Error::format("{}: a batch of positions {}..{} is wider than the {} rows its sliding-window KV rings "
                             "were sized for (KvPoolConfig::rows_max: the prefill chunk -b/--batch-size and "
                             "--draft-max + 1)",
                             name_, first, last, config_.rows_max);
    // windowed layers (rings, or a loaded state's last window) must hold what the first row reads
    const uint32_t stored = std::max(stored_[size_t(seq)], last + 1);
    if (const int32_t l = windows_missing(seq, first, stored, false); l >= 0)
        return Error::format("{}: a batch at positions {}..{} of sequence {}: {}", name_, first, last, seq,
                             ring_message(seq, l, first, stored));
    TDM_TRY(reserve(seq, last + 1));
    TDM_TRY(make_writable(seq, first, last));
    stored_[size_t(seq)] = std::max(stored_[size_t(seq)], last + 1);
    return {};
}

void KvPool::release(int32_t block) {
    TDM_ASSERT(refs_[size_t(block)] > 0);
    if (--refs_[size_t(block)] == 0) free_.push_back(uint32_t(block));
}

uint32_t KvPool::shared_blocks() const {
    return uint32_t(std::count_if(refs_.begin(), refs_.end(), [](uint32_t r) { return r > 1; }));
}

Result<uint32_t> KvPool::share_prefix(int src, int dst, uint32_t n_tokens) {
    TDM_ASSERT(src >= 0 && size_t(src) < live_.size() && dst >= 0 && size_t(dst) < live_.size() && src != dst);
    if (!can_share()) return Error::format("{}: blocks of sliding-window rings or recurrent states are not shared", name_);
    if (!live_[size_t(dst)] || !seq_blocks_[size_t(dst)].empty())
        return Error::format("{}: sequence {} must be live and empty to share a prefix", name_, dst);
    const uint32_t n = std::min<uint32_t>(n_tokens / config_.block_size, uint32_t(seq_blocks_[size_t(src)].size()));
    auto& to = seq_blocks_[size_t(dst)];
    for (uint32_t b = 0; b < n; ++b) {
        const int32_t block = seq_blocks_[size_t(src)][b];
        ++refs_[size_t(block)];
        to.push_back(block);
    }
    stored_[size_t(dst)] = n * config_.block_size;
    imported_[size_t(dst)] = 0;
    TDM_TRY(write_table_row(dst));
    return n * config_.block_size;
}

uint32_t KvPool::copies_needed(int seq, uint32_t first, uint32_t last) const {
    const auto& blocks = seq_blocks_[size_t(seq)];
    const uint32_t b0 = first / config_.block_size;
    const uint32_t b1 = std::min<uint32_t>(last / config_.block_size + 1, uint32_t(blocks.size()));
    uint32_t n = 0;
    for (uint32_t b = b0; b < b1; ++b) n += refs_[size_t(blocks[b])] > 1;
    return n;
}

Status KvPool::make_writable(int seq, uint32_t first, uint32_t last) {
    auto& blocks = seq_blocks_[size_t(seq)];
    const uint32_t b0 = first / config_.block_size;
    const uint32_t b1 = std::min<uint32_t>(last / config_.block_size + 1, uint32_t(blocks.size()));
    const uint32_t n = copies_needed(seq, first, last);
    if (n == 0) return {};
    if (n > free_.size())
        return Error::format("KV cache full: {} shared block(s) of sequence {} need a copy and {} block(s) are free "
                             "(raise [model] kv_memory)",
                             n, seq, free_.size());
    // (index in `blocks`, the copy's block): the pool changes only once the copies are made
    std::vector<std::pair<uint32_t, int32_t>> copies;
    for (uint32_t b = b0, k = 0; b < b1; ++b)
        if (refs_[size_t(blocks[b])] > 1) copies.emplace_back(b, int32_t(free_[free_.size() - 1 - k++]));
    auto cb = TDM_TRY(vk::CommandBuffer::create(device_));
    TDM_TRY(cb->begin());
    for (const KvLayerBinding& l : layers_) {
        if (l.ring_blocks) continue;  // never shared
        const uint64_t es = l.f16 ? 2 : 4;
        const uint64_t kb = uint64_t(config_.block_size) * l.n_kv_head * l.dk * es;
        const uint64_t vb = uint64_t(config_.block_size) * l.n_kv_head * l.dv * es;
        for (const auto& [b, to] : copies) {
            const uint64_t from = uint64_t(blocks[b]);
            cb->record_copy(l.k.sub(from * kb, kb), l.k.sub(uint64_t(to) * kb, kb), kb);
            cb->record_copy(l.v.sub(from * vb, vb), l.v.sub(uint64_t(to) * vb, vb), vb);
        }
    }
    cb->record_barrier();
    TDM_TRY(cb->end());
    TDM_TRY(cb->submit_and_wait());
    for (const auto& [b, to] : copies) {
        free_.pop_back();  // `to`: the copies took the top of the stack, in order
        refs_[size_t(to)] = 1;
        --refs_[size_t(blocks[b])];  // still held by the others
        blocks[b] = to;
    }
    return write_table_row(seq);
}

uint32_t KvPool::held_from(int seq, uint32_t i, uint32_t stored) const {
    const KvLayerBinding& l = layers_[i];
    if (!l.window) return 0;
    const uint32_t imp = imported_[size_t(seq)];
    uint32_t from = imp - std::min(imp, l.window);  // an import brought only the last rows
    const uint64_t capacity = uint64_t(l.ring_blocks) * config_.block_size;
    if (capacity && stored > capacity) from = std::max(from, uint32_t(stored - capacity));
    return from;
}

int32_t KvPool::windows_missing(int seq, uint32_t pos, uint32_t stored, bool for_export) const {
    for (uint32_t i = 0; i < n_layers(); ++i) {
        const uint32_t w = layers_[i].window;
        if (!w) continue;
        const uint32_t keep = for_export ? w : w - 1;
        const uint32_t lo = pos > keep ? pos - keep : 0;
        if (lo < pos && lo < held_from(seq, i, stored)) return int32_t(i);
    }
    return -1;
}

std::string KvPool::ring_message(int seq, int32_t layer, uint32_t pos, uint32_t stored) const {
    const KvLayerBinding& l = layers_[size_t(layer)];
    return fmt::format("attention layer {} (window {}) keeps only positions {}.. of the {} written{}, not all of the "
                       "window before position {}",
                       layer, l.window, held_from(seq, uint32_t(layer), stored), stored,
                       l.ring_blocks ? fmt::format(" (a ring of {} positions)", l.ring_blocks * config_.block_size)
                                     : std::string(" (a loaded state brings only the last window)"),
                       pos);
}

int32_t KvPool::block_id(int seq, uint32_t i, uint32_t b) const {
    const KvLayerBinding& l = layers_[i];
    if (l.ring_blocks) return int32_t(uint32_t(seq) * l.ring_blocks + b % l.ring_blocks);
    return seq_blocks_[size_t(seq)][b];
}

uint32_t KvPool::reserved_tokens(int seq) const {
    return uint32_t(seq_blocks_[seq].size()) * config_.block_size;
}

}  // namespace tdm
