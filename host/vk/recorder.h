/* SPDX-License-Identifier: Apache-2.0 */
// host/vk/recorder.h: command recording and submission.
//
// record_* only records; submit() hands the buffer to the queue and returns;
// wait() blocks on its fence. A recorded buffer can be submitted again and again
// (graphs of the same shape are recorded once and replayed). Every dispatch
// goes through record_dispatch, which knows the pipeline's name for profiles.
// With profiling on (Device::profiling()), a timestamp follows each dispatch and
// the per-label times are added to a Profiler.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "vk/memory.h"
#include "vk/pipeline.h"

namespace tdm::vk {

struct Binding {
    VkDescriptorType type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    VkBuffer buffer = VK_NULL_HANDLE;
    uint64_t offset = 0, range = 0;
    VkBufferView view = VK_NULL_HANDLE;

    static Binding storage(const BufferSlice& s) {
        return {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, s.handle(), s.offset, s.size, VK_NULL_HANDLE};
    }
    static Binding texel(VkBufferView v) {
        return {VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, VK_NULL_HANDLE, 0, 0, v};
    }
};

// What a per-dispatch profile says of a dispatch besides its kernel: the graph node it
// belongs to (graph/executor.cpp writes one per node; several dispatches may share it).
struct DispatchNote {
    uint32_t node = 0;      // index of the node in its graph
    std::string name;       // the node's name ("blk.3.attn_q")
    std::string op;         // its op ("matmul")
    std::string shape;      // its output, as Graph::describe writes it
    std::string weight_type;  // a weight input's type ("q8_0"), else empty
    uint64_t bytes_read = 0;  // see DispatchNote's writer in graph/executor.cpp
};

// One dispatch of a profiled run: its kernel, what it belongs to, its grid and its time.
struct ProfiledDispatch {
    const std::string* kernel;
    const DispatchNote* note;  // null for a dispatch outside any graph node
    uint32_t groups[3];
    double ns;
};
// Called after each profiled command buffer's run, dispatch by dispatch (--profile-json).
using RunProfileSink = std::function<void(std::span<const ProfiledDispatch>)>;

// Accumulated per-op GPU times, printed as a table (TANDEM_PROFILE=1).
class Profiler {
public:
    void add(const std::string& label, double ns);
    // Every profiled run from now on is also handed to `sink` (empty: none). The sink runs on
    // the thread that waits for the run.
    void set_run_sink(RunProfileSink sink);
    void run_done(std::span<const ProfiledDispatch> run);
    std::string table() const;  // sorted by total time, with share of the whole
    double total_ns() const;    // of every label
    void reset();
    bool empty() const;

private:
    struct Entry { uint64_t count = 0; double total_ns = 0; };
    mutable std::mutex mutex_;
    std::map<std::string, Entry> entries_;
    RunProfileSink run_sink_;
};
Profiler& global_profiler();

class CommandBuffer {
public:
    static Result<std::unique_ptr<CommandBuffer>> create(Device& device);
    ~CommandBuffer();
    CommandBuffer(const CommandBuffer&) = delete;
    CommandBuffer& operator=(const CommandBuffer&) = delete;

    Status begin();  // discards what was recorded before
    void record_dispatch(const Pipeline& p, std::span<const Binding> bindings, const void* push,
                         uint32_t push_size, uint32_t gx, uint32_t gy = 1, uint32_t gz = 1,
                         std::string_view label = {});
    // A dispatch whose grid the device reads from `grid` (VkDispatchIndirectCommand: three
    // uint32 workgroup counts) when it runs: a grid the host sets per run in a recorded
    // buffer. host_grid: the host's copy of those counts, read for per-dispatch profiles
    // after the run (it must outlive this buffer's runs).
    void record_dispatch_indirect(const Pipeline& p, std::span<const Binding> bindings, const void* push,
                                  uint32_t push_size, const BufferSlice& grid, const uint32_t* host_grid,
                                  std::string_view label = {});
    // Makes earlier shader/transfer writes visible to later shader/transfer reads (and to
    // indirect dispatches' grid reads).
    void record_barrier();
    // Makes device writes visible to host reads after wait().
    void record_host_barrier();
    void record_copy(const BufferSlice& src, const BufferSlice& dst, uint64_t size);
    void record_fill(const BufferSlice& dst, uint32_t value);
    void record_update(const BufferSlice& dst, const void* data, uint32_t size);  // size <= 65536, %4 == 0
    // Attributes dispatches [first, end) to one graph node in per-dispatch profiles.
    void note_dispatches(uint32_t first, uint32_t end, DispatchNote note);
    Status end();

    // then: another recorded buffer (copies only) that runs right after this one in the same
    // submission, under this buffer's fence (a graph's on-request readback); not left pending.
    Status submit(const CommandBuffer* then = nullptr);
    Status wait();
    Status submit_and_wait() {
        TDM_TRY(submit());
        return wait();
    }
    bool pending() const { return pending_; }
    uint32_t dispatch_count() const { return uint32_t(labels_.size()); }

private:
    CommandBuffer(Device& d) : device_(d) {}
    Device& device_;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    VkCommandBuffer cb_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    VkQueryPool queries_ = VK_NULL_HANDLE;
    uint32_t query_capacity_ = 0;
    bool pending_ = false;
    bool recording_ = false;
    std::vector<std::string> labels_;  // one per dispatch (profiling)
    std::vector<std::array<uint32_t, 3>> groups_;  // one per dispatch
    std::vector<const uint32_t*> host_grids_;      // one per dispatch: an indirect one's host grid, else null
    std::vector<uint32_t> note_of_;    // per dispatch: index into notes_ + 1, 0 for none
    std::vector<DispatchNote> notes_;
    Status grow_queries(uint32_t n);
    // Binds the pipeline, its bindings and push constants for the dispatch that follows.
    void bind(const Pipeline& p, std::span<const Binding> bindings, const void* push, uint32_t push_size);
    // Books the dispatch just recorded (its label, grid, timestamp).
    void dispatched(const Pipeline& p, std::string_view label, std::array<uint32_t, 3> groups,
                    const uint32_t* host_grid);
};

}  // namespace tdm::vk
