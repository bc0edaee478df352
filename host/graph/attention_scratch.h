/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/attention_scratch.h: the partials buffer that every split attention pass of
// a device shares (ops/attention_split.cpp writes and reads it; graph/split_attention_grid.h
// says how much a run needs). One buffer per device rather than one per compiled graph
// or layer: a graph's passes run one after another (the executor orders each pass pair
// after the previous one's reads), and graphs of one device share its queue, where every
// graph orders its first use of the scratch after what was submitted before it
// (graph/executor.cpp). Grown on demand to the largest run any graph has needed, never
// shrunk, so its bytes follow the contexts in use, not the KV capacity.
// Lifetime of a replaced buffer: the scratch holds only the current one; a graph holds the
// buffer it runs with from its submit until its wait, never while idle. A buffer replaced
// by a larger one is therefore freed as soon as no graph in flight uses it, and an idle
// graph recorded against it records again before its next run (each buffer has a
// generation number, so a graph never mistakes a new buffer at a reused address for
// the one it recorded with).
// Not here: the rewrite that forms the passes (graph/split_attention.h).
#pragma once

#include <atomic>
#include <memory>
#include <mutex>

#include "vk/memory.h"

namespace tdm {

class AttentionScratch {
public:
    // The device's scratch: created empty by the first graph that needs one, freed with
    // the last graph that holds it.
    static std::shared_ptr<AttentionScratch> of(vk::Device& device);

    struct Lease {
        std::shared_ptr<vk::Buffer> buffer;
        uint64_t generation = 0;  // 1 for the first buffer, +1 for each that replaces one
    };
    // A buffer of at least `bytes`: the current one, or a new one of at least 1.5 times
    // its size (a context that grows split by split re-records graphs a logarithmic
    // number of times), in whole multiples of kGranule up to what the device binds at
    // once (maxStorageBufferRange: every pass binds the whole buffer); an error beyond it,
    // which graphs never meet: the compiler folds a layer whose worst case would exceed it
    // (graph/split_attention.h).
    Result<Lease> reserve(uint64_t bytes);
    // Of the current buffer; 0 before the first reserve().
    uint64_t bytes() const;
    // Of every buffer not freed yet: the current one and those graphs in flight still hold.
    uint64_t live_bytes() const { return live_->load(); }

    static constexpr uint64_t kGranule = 4 << 10;

    explicit AttentionScratch(vk::Device& device) : device_(device) {}

private:
    vk::Device& device_;
    mutable std::mutex mutex_;
    std::shared_ptr<vk::Buffer> buffer_;
    uint64_t generation_ = 0;
    // shared with the buffers' deleters, which may run after the scratch is gone
    std::shared_ptr<std::atomic<uint64_t>> live_ = std::make_shared<std::atomic<uint64_t>>(0);
};

}  // namespace tdm
