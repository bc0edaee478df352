// SPDX-License-Identifier: Apache-2.0
// host/vk/recorder.cpp
#include "vk/recorder.h"

#include <algorithm>
#include <vector>

#include "common/log.h"

namespace tdm::vk {

// ---------------------------------------------------------------------------
// Profiler
// ---------------------------------------------------------------------------
void Profiler::add(const std::string& label, double ns) {
    std::lock_guard<std::mutex> lock(mutex_);
    Entry& e = entries_[label];
    e.count++;
    e.total_ns += ns;
}

void Profiler::reset() {
    std::lock_guard<std::mutex> lock(mutex_);
    entries_.clear();
}

void Profiler::set_run_sink(RunProfileSink sink) {
    std::lock_guard<std::mutex> lock(mutex_);
    run_sink_ = std::move(sink);
}

void Profiler::run_done(std::span<const ProfiledDispatch> run) {
    RunProfileSink sink;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        sink = run_sink_;
    }
    if (sink) sink(run);
}

double Profiler::total_ns() const {
    std::lock_guard<std::mutex> lock(mutex_);
    double total = 0;
    for (const auto& [label, e] : entries_) total += e.total_ns;
    return total;
}

bool Profiler::empty() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.empty();
}

std::string Profiler::table() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::vector<std::pair<std::string, Entry>> rows(entries_.begin(), entries_.end());
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.total_ns > b.second.total_ns; });
    double total = 0;
    for (auto& r : rows) total += r.second.total_ns;
    std::string s = fmt::format("{:<44} {:>8} {:>11} {:>10} {:>6}\n", "op", "calls", "total ms", "avg us", "%");
    for (auto& [label, e] : rows)
        s += fmt::format("{:<44} {:>8} {:>11.3f} {:>10.1f} {:>6.1f}\n", label, e.count, e.total_ns / 1e6,
                         e.total_ns / 1e3 / double(e.count), total > 0 ? 100.0 * e.total_ns / total : 0.0);
    s += fmt::format("{:<44} {:>8} {:>11.3f}\n", "total", "", total / 1e6);
    return s;
}

Profiler& global_profiler() {
    static Profiler p;
    return p;
}

// ---------------------------------------------------------------------------
// CommandBuffer
// ---------------------------------------------------------------------------
Result<std::unique_ptr<CommandBuffer>> CommandBuffer::create(Device& device) {
    std::unique_ptr<CommandBuffer> c(new CommandBuffer(device));
    const DeviceFuncs& f = device.fn();
    VkCommandPoolCreateInfo pci{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pci.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pci.queueFamilyIndex = device.queue_family();
    TDM_VK_CHECK(f.vkCreateCommandPool(device.handle(), &pci, nullptr, &c->pool_), "command pool");
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = c->pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    TDM_VK_CHECK(f.vkAllocateCommandBuffers(device.handle(), &ai, &c->cb_), "command buffer");
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    TDM_VK_CHECK(f.vkCreateFence(device.handle(), &fci, nullptr, &c->fence_), "fence");
    return c;
}

CommandBuffer::~CommandBuffer() {
    const DeviceFuncs& f = device_.fn();
    if (pending_) f.vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX);
    if (queries_) f.vkDestroyQueryPool(device_.handle(), queries_, nullptr);
    if (fence_) f.vkDestroyFence(device_.handle(), fence_, nullptr);
    if (pool_) f.vkDestroyCommandPool(device_.handle(), pool_, nullptr);
}

Status CommandBuffer::grow_queries(uint32_t n) {
    if (n <= query_capacity_) return {};
    const DeviceFuncs& f = device_.fn();
    if (queries_) f.vkDestroyQueryPool(device_.handle(), queries_, nullptr);
    query_capacity_ = std::max(n, query_capacity_ * 2);
    VkQueryPoolCreateInfo qi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = query_capacity_;
    TDM_VK_CHECK(f.vkCreateQueryPool(device_.handle(), &qi, nullptr, &queries_), "timestamp query pool");
    return {};
}

Status CommandBuffer::begin() {
    TDM_ASSERT(!pending_);
    const DeviceFuncs& f = device_.fn();
    TDM_VK_CHECK(f.vkResetCommandBuffer(cb_, 0), "resetting command buffer");
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    TDM_VK_CHECK(f.vkBeginCommandBuffer(cb_, &bi), "beginning command buffer");
    labels_.clear();
    groups_.clear();
    host_grids_.clear();
    note_of_.clear();
    notes_.clear();
    recording_ = true;
    if (device_.profiling()) {
        // Room for the dispatches of a large graph (the 31B shape records about 1300);
        // dispatches past it go untimed, and a profile of the run ends at the last timed one.
        TDM_TRY(grow_queries(4096));
        f.vkCmdResetQueryPool(cb_, queries_, 0, query_capacity_);
        f.vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);
    }
    return {};
}

void CommandBuffer::bind(const Pipeline& p, std::span<const Binding> bindings, const void* push,
                         uint32_t push_size) {
    TDM_ASSERT(recording_);
    TDM_ASSERT_MSG(bindings.size() >= p.bindings().size(), p.name().c_str());
    TDM_ASSERT(push_size <= 128);
    const DeviceFuncs& f = device_.fn();
    f.vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.handle());
    VkWriteDescriptorSet writes[16];
    VkDescriptorBufferInfo infos[16];
    TDM_ASSERT(bindings.size() <= 16);
    uint32_t n = 0;
    for (uint32_t i = 0; i < p.bindings().size(); ++i) {
        if (p.bindings()[i] == VK_DESCRIPTOR_TYPE_MAX_ENUM) continue;  // removed by the compiler
        const Binding& b = bindings[i];
        TDM_ASSERT_MSG(b.type == p.bindings()[i], p.name().c_str());
        writes[n] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[n].dstBinding = i;
        writes[n].descriptorCount = 1;
        writes[n].descriptorType = b.type;
        if (b.type == VK_DESCRIPTOR_TYPE_STORAGE_BUFFER) {
            infos[n] = {b.buffer, b.offset, b.range};
            writes[n].pBufferInfo = &infos[n];
        } else {
            writes[n].pTexelBufferView = &b.view;
        }
        ++n;
    }
    if (n) f.vkCmdPushDescriptorSetKHR(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout(), 0, n, writes);
    if (push_size) f.vkCmdPushConstants(cb_, p.layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
}

void CommandBuffer::dispatched(const Pipeline& p, std::string_view label, std::array<uint32_t, 3> groups,
                               const uint32_t* host_grid) {
    labels_.emplace_back(label.empty() ? p.name() : std::string(label));
    groups_.push_back(groups);
    host_grids_.push_back(host_grid);
    if (device_.profiling() && labels_.size() < query_capacity_)  // query i + 1 ends dispatch i
        device_.fn().vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, queries_,
                                         uint32_t(labels_.size()));
}

void CommandBuffer::record_dispatch(const Pipeline& p, std::span<const Binding> bindings, const void* push,
                                    uint32_t push_size, uint32_t gx, uint32_t gy, uint32_t gz,
                                    std::string_view label) {
    bind(p, bindings, push, push_size);
    device_.fn().vkCmdDispatch(cb_, gx, gy, gz);
    dispatched(p, label, {gx, gy, gz}, nullptr);
}

void CommandBuffer::record_dispatch_indirect(const Pipeline& p, std::span<const Binding> bindings, const void* push,
                                             uint32_t push_size, const BufferSlice& grid, const uint32_t* host_grid,
                                             std::string_view label) {
    TDM_ASSERT(grid.size >= 12 && grid.offset % 4 == 0);
    bind(p, bindings, push, push_size);
    device_.fn().vkCmdDispatchIndirect(cb_, grid.handle(), grid.offset);
    dispatched(p, label, {0, 0, 0}, host_grid);
}

void CommandBuffer::note_dispatches(uint32_t first, uint32_t end, DispatchNote note) {
    TDM_ASSERT(first <= end && end <= labels_.size());
    if (first == end) return;
    notes_.push_back(std::move(note));
    note_of_.resize(labels_.size(), 0);
    for (uint32_t i = first; i < end; ++i) note_of_[i] = uint32_t(notes_.size());
}

void CommandBuffer::record_barrier() {
    // indirect grids come in with the graph's inputs (graph/split_attention_grid.h)
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                       VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_INDIRECT_COMMAND_READ_BIT;
    device_.fn().vkCmdPipelineBarrier(
        cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
        VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT, 0,
        1, &mb, 0, nullptr, 0, nullptr);
}

void CommandBuffer::record_host_barrier() {
    // The host reads the results; later submissions on the queue (the next pass reading
    // the KV cache, a draft graph reading the target's hidden rows) read them in shaders.
    VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
    mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                       VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    device_.fn().vkCmdPipelineBarrier(
        cb_, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
        VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
        nullptr, 0, nullptr);
}

void CommandBuffer::record_copy(const BufferSlice& src, const BufferSlice& dst, uint64_t size) {
    VkBufferCopy c{src.offset, dst.offset, size};
    device_.fn().vkCmdCopyBuffer(cb_, src.handle(), dst.handle(), 1, &c);
}

void CommandBuffer::record_fill(const BufferSlice& dst, uint32_t value) {
    device_.fn().vkCmdFillBuffer(cb_, dst.handle(), dst.offset, dst.size, value);
}

void CommandBuffer::record_update(const BufferSlice& dst, const void* data, uint32_t size) {
    TDM_ASSERT(size <= 65536 && size % 4 == 0);
    device_.fn().vkCmdUpdateBuffer(cb_, dst.handle(), dst.offset, size, data);
}

Status CommandBuffer::end() {
    TDM_ASSERT(recording_);
    recording_ = false;
    TDM_VK_CHECK(device_.fn().vkEndCommandBuffer(cb_), "ending command buffer");
    return {};
}

Status CommandBuffer::submit(const CommandBuffer* then) {
    TDM_ASSERT(!recording_ && !pending_);
    TDM_ASSERT(!then || (!then->recording_ && !then->pending_));
    const DeviceFuncs& f = device_.fn();
    TDM_VK_CHECK(f.vkResetFences(device_.handle(), 1, &fence_), "resetting fence");
    const VkCommandBuffer buffers[2] = {cb_, then ? then->cb_ : VK_NULL_HANDLE};
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = then ? 2 : 1;
    si.pCommandBuffers = buffers;
    {
        std::lock_guard<std::mutex> lock(device_.queue_mutex());
        TDM_VK_CHECK(f.vkQueueSubmit(device_.queue(), 1, &si, fence_), "submitting work to the device");
    }
    pending_ = true;
    return {};
}

Status CommandBuffer::wait() {
    if (!pending_) return {};
    const DeviceFuncs& f = device_.fn();
    VkResult r = f.vkWaitForFences(device_.handle(), 1, &fence_, VK_TRUE, UINT64_MAX);
    pending_ = false;
    if (r != VK_SUCCESS) return Error::format("waiting for the device: {}", result_name(r));
    if (device_.profiling() && !labels_.empty()) {
        const uint32_t n = std::min<uint32_t>(uint32_t(labels_.size()) + 1, query_capacity_);
        std::vector<uint64_t> ts(n);
        if (f.vkGetQueryPoolResults(device_.handle(), queries_, 0, n, n * 8, ts.data(), 8,
                                    VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) == VK_SUCCESS) {
            const double period = device_.caps().timestamp_period_ns;
            std::vector<ProfiledDispatch> run;
            run.reserve(n);
            for (uint32_t i = 0; i + 1 < n; ++i) {
                const double ns = double(ts[i + 1] - ts[i]) * period;
                global_profiler().add(labels_[i], ns);
                const uint32_t note = i < note_of_.size() ? note_of_[i] : 0;
                const uint32_t* g = host_grids_[i] ? host_grids_[i] : groups_[i].data();
                run.push_back({&labels_[i], note ? &notes_[note - 1] : nullptr, {g[0], g[1], g[2]}, ns});
            }
            global_profiler().run_done(run);
        }
    }
    return {};
}

}  // namespace tdm::vk
