/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/weight.h: a weight tensor resident on the device, in the layout of
// weight_layout.h, split into row chunks so that no binding exceeds the device's
// limits (maxStorageBufferRange: 128 MiB on lavapipe; maxTexelBufferElements).
// On the texel path each chunk also carries its texel views (RGBA32UI main
// plane, R16UI scale plane).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/weight_layout.h"
#include "vk/memory.h"

namespace tdm {

struct WeightChunk {
    int64_t row_begin = 0, n_rows = 0;
    vk::BufferSlice main, scale;  // scale: empty when the type has no scale plane
    VkBufferView main_view = VK_NULL_HANDLE, scale_view = VK_NULL_HANDLE;
};

struct WeightUploadOptions {
    // Largest binding in bytes; 0 = the device's limits. Tests lower it to
    // exercise chunking on small tensors.
    uint64_t max_binding_bytes = 0;
    // Chunk boundaries fall on multiples of this many rows, so that groups of
    // rows read together (the M rows of one expert of a [K, M, E] stack, read by
    // matmul_id) never straddle two chunks. 0 = ne[1] for 3-D and 4-D weights,
    // 1 otherwise. Error if one group exceeds a binding.
    int64_t row_group = 0;
};

class DeviceWeight {
public:
    // Uploads a GGUF-layout tensor (ne in ggml order, ne[0] = columns).
    // `fill(dst, row_begin, n_rows)` may be given instead of `data` to produce the
    // source rows on the fly (transforms at load time); it writes GGUF-layout rows.
    using RowSource = std::function<void(uint8_t* dst, int64_t row_begin, int64_t n_rows)>;
    static Result<std::unique_ptr<DeviceWeight>> upload(vk::Device& device, vk::Arena& arena, std::string name,
                                                        DType type, const int64_t ne[4], const RowSource& rows,
                                                        const WeightUploadOptions& opt = {});
    static Result<std::unique_ptr<DeviceWeight>> upload(vk::Device& device, vk::Arena& arena, std::string name,
                                                        DType type, const int64_t ne[4], const uint8_t* data,
                                                        const WeightUploadOptions& opt = {});
    // A view of the first n_rows rows of a 2-D weight (e.g. the LM head rows of
    // a reduced draft vocabulary): shares the device memory and views of `w`,
    // which must outlive it.
    static Result<std::unique_ptr<DeviceWeight>> prefix(const DeviceWeight& w, int64_t n_rows);
    // An f32 table of n_rows x cols over device memory someone else writes (a graph
    // result bound with Graph::bind_storage): graphs read its rows with get_rows.
    // `rows` must outlive the weight.
    static Result<std::unique_ptr<DeviceWeight>> f32_rows_over(std::string name, const vk::BufferSlice& rows,
                                                               int64_t cols, int64_t n_rows);
    // A 2-D table kept in host memory (tdm.host_rows): `data` (GGUF-layout rows, in the
    // model file's mapping, which must outlive it) is read by rows on the host; the
    // weight has no device memory and no op reads it.
    static Result<std::unique_ptr<DeviceWeight>> in_host_memory(std::string name, DType type, const int64_t ne[4],
                                                                const uint8_t* data);
    ~DeviceWeight();
    DeviceWeight(const DeviceWeight&) = delete;
    DeviceWeight& operator=(const DeviceWeight&) = delete;

    const std::string& name() const { return name_; }
    DType type() const { return layout_.type; }
    const int64_t* ne() const { return ne_; }
    int64_t cols() const { return layout_.cols; }
    int64_t rows() const { return layout_.rows; }
    const WeightLayout& layout() const { return layout_; }
    const std::vector<WeightChunk>& chunks() const { return chunks_; }
    bool has_texel_views() const { return !chunks_.empty() && chunks_[0].main_view != VK_NULL_HANDLE; }
    uint64_t device_bytes() const;
    bool in_host_memory() const { return host_data_ != nullptr; }
    // Row r of a host table as f32 (cols() values), dequantized as get_rows would.
    void host_row_f32(int64_t r, float* dst) const;

private:
    DeviceWeight() = default;
    vk::Device* device_ = nullptr;
    std::string name_;
    int64_t ne_[4] = {1, 1, 1, 1};
    WeightLayout layout_;
    std::vector<WeightChunk> chunks_;
    bool owns_views_ = true;
    const uint8_t* host_data_ = nullptr;  // host tables only
};

// Writes `size` bytes to a device slice: directly when its memory is
// host-visible, else through a staging buffer and a copy. `fill(dst, offset, n)`
// produces bytes [offset, offset + n) of the destination; `granule` keeps
// staging pieces a multiple of some unit (whole rows).
Status write_device(vk::Device& device, const vk::BufferSlice& dst, uint64_t size, uint64_t granule,
                    const std::function<void(uint8_t* dst, uint64_t offset, uint64_t n)>& fill);

// Reads device bytes back to the host (staging when needed).
Status read_device(vk::Device& device, const vk::BufferSlice& src, void* dst, uint64_t size);

}  // namespace tdm
