// SPDX-License-Identifier: Apache-2.0
// host/graph/weight.cpp
#include "graph/weight.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/quant.h"
#include "vk/recorder.h"

namespace tdm {

Status write_device(vk::Device& device, const vk::BufferSlice& dst, uint64_t size, uint64_t granule,
                    const std::function<void(uint8_t*, uint64_t, uint64_t)>& fill) {
    if (size == 0) return {};
    if (uint8_t* p = dst.mapped()) {
        fill(p, 0, size);
        return {};
    }
    const uint64_t piece = std::max<uint64_t>(granule, (32ull << 20) / std::max<uint64_t>(granule, 1) * granule);
    auto staging = TDM_TRY(vk::Buffer::create(device, std::min(piece, size), vk::MemoryKind::host, "upload staging"));
    auto cb = TDM_TRY(vk::CommandBuffer::create(device));
    for (uint64_t off = 0; off < size; off += piece) {
        const uint64_t n = std::min(piece, size - off);
        fill(staging->mapped(), off, n);
        TDM_TRY(cb->begin());
        cb->record_copy({staging.get(), 0, n}, dst.sub(off, n), n);
        TDM_TRY(cb->end());
        TDM_TRY(cb->submit_and_wait());
    }
    return {};
}

Status read_device(vk::Device& device, const vk::BufferSlice& src, void* dst, uint64_t size) {
    if (const uint8_t* p = src.mapped()) {
        std::memcpy(dst, p, size);
        return {};
    }
    auto staging = TDM_TRY(vk::Buffer::create(device, size, vk::MemoryKind::host, "readback staging"));
    auto cb = TDM_TRY(vk::CommandBuffer::create(device));
    TDM_TRY(cb->begin());
    cb->record_copy(src, {staging.get(), 0, size}, size);
    cb->record_host_barrier();
    TDM_TRY(cb->end());
    TDM_TRY(cb->submit_and_wait());
    std::memcpy(dst, staging->mapped(), size);
    return {};
}

namespace {

Result<VkBufferView> make_view(vk::Device& device, const vk::BufferSlice& s, VkFormat format, std::string_view what) {
    VkBufferViewCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
    ci.buffer = s.handle();
    ci.format = format;
    ci.offset = s.offset;
    ci.range = s.size;
    VkBufferView view = VK_NULL_HANDLE;
    TDM_VK_CHECK(device.fn().vkCreateBufferView(device.handle(), &ci, nullptr, &view),
                 fmt::format("creating texel view of {}", what));
    return view;
}

// Produces the source rows of chunk c in pieces of about 16 MiB, each into `scratch`,
// and hands each to use(first row within the chunk, rows).
template <class Use>
Status for_each_piece(const DeviceWeight::RowSource& rows, const WeightChunk& c, uint64_t src_row,
                      std::vector<uint8_t>& scratch, Use&& use) {
    const int64_t piece = std::max<int64_t>(1, int64_t((16ull << 20) / src_row));
    for (int64_t p0 = 0; p0 < c.n_rows; p0 += piece) {
        const int64_t pn = std::min(piece, c.n_rows - p0);
        scratch.resize(uint64_t(pn) * src_row);
        rows(scratch.data(), c.row_begin + p0, pn);
        TDM_TRY(use(p0, pn));
    }
    return {};
}

// Fills chunk c of a weight stored in row tiles: source rows in pieces, split into
// planes row after row, then moved to their tiled places. Written in place where the
// device memory is mapped, else through host copies of the whole chunk.
Status upload_tiled(vk::Device& device, const WeightLayout& l, const DeviceWeight::RowSource& rows,
                    const WeightChunk& c, uint64_t src_row, std::vector<uint8_t>& scratch) {
    std::vector<uint8_t> main_host, scale_host;
    uint8_t* main_dst = c.main.mapped();
    uint8_t* scale_dst = c.scale ? c.scale.mapped() : nullptr;
    if (!main_dst || (c.scale && !scale_dst)) {
        main_host.assign(c.main.size, 0);
        scale_host.assign(c.scale ? c.scale.size : 0, 0);
        main_dst = main_host.data();
        scale_dst = scale_host.data();
    } else if (const uint64_t stored = uint64_t(stored_rows(l, c.n_rows)); stored > uint64_t(c.n_rows)) {
        // the padding of the last tile is never read; zeros keep the memory deterministic
        const uint64_t last = stored - uint64_t(l.row_tile);
        std::memset(main_dst + last * l.main_row_bytes, 0, c.main.size - last * l.main_row_bytes);
        if (scale_dst) std::memset(scale_dst + last * l.scale_row_bytes, 0, c.scale.size - last * l.scale_row_bytes);
    }
    std::vector<uint8_t> mainbuf, scalebuf;
    TDM_TRY(for_each_piece(rows, c, src_row, scratch, [&](int64_t p0, int64_t pn) -> Status {
        const uint8_t* main_rows = scratch.data();  // types without a scale plane: rows as in the file
        if (l.scale_row_bytes) {
            mainbuf.resize(uint64_t(pn) * l.main_row_bytes);
            scalebuf.resize(uint64_t(pn) * l.scale_row_bytes);
            repack_rows(l, scratch.data(), pn, mainbuf.data(), scalebuf.data());
            main_rows = mainbuf.data();
        }
        tile_rows(l, main_rows, scalebuf.data(), p0, pn, main_dst, scale_dst);
        return {};
    }));
    if (main_host.empty()) return {};
    TDM_TRY(write_device(device, c.main, c.main.size, 16, [&](uint8_t* dst, uint64_t off, uint64_t n) {
        std::memcpy(dst, main_host.data() + off, n);
    }));
    if (c.scale)
        TDM_TRY(write_device(device, c.scale, c.scale.size, 4, [&](uint8_t* dst, uint64_t off, uint64_t n) {
            std::memcpy(dst, scale_host.data() + off, n);
        }));
    return {};
}

}  // namespace

Result<std::unique_ptr<DeviceWeight>> DeviceWeight::upload(vk::Device& device, vk::Arena& arena, std::string name,
                                                           DType type, const int64_t ne[4], const uint8_t* data,
                                                           const WeightUploadOptions& opt) {
    const WeightLayout probe = TDM_TRY(weight_layout(type, ne[0], ne[1] * ne[2] * ne[3]));
    const uint64_t src_row = row_bytes(type, uint64_t(ne[0]));
    (void)probe;
    return upload(device, arena, std::move(name), type, ne,
                  RowSource([data, src_row](uint8_t* dst, int64_t r0, int64_t n) {
                      std::memcpy(dst, data + uint64_t(r0) * src_row, uint64_t(n) * src_row);
                  }),
                  opt);
}

Result<std::unique_ptr<DeviceWeight>> DeviceWeight::upload(vk::Device& device, vk::Arena& arena, std::string name,
                                                           DType type, const int64_t ne[4], const RowSource& rows,
                                                           const WeightUploadOptions& opt) {
    std::unique_ptr<DeviceWeight> w(new DeviceWeight());
    w->device_ = &device;
    w->name_ = std::move(name);
    for (int i = 0; i < 4; ++i) w->ne_[i] = ne[i];
    w->layout_ = TDM_TRY_CTX(weight_layout(type, ne[0], ne[1] * ne[2] * ne[3]), w->name_);
    WeightLayout& l = w->layout_;
    const vk::DeviceCaps& caps = device.caps();
    const bool texel = caps.prefer_texel_weights && l.texel_rows;

    // rows per chunk: every binding (storage range, texel elements) must fit
    uint64_t limit = caps.max_storage_buffer_range ? caps.max_storage_buffer_range : (1ull << 31);
    if (texel) limit = std::min<uint64_t>(limit, caps.max_texel_buffer_elements * 16);
    if (opt.max_binding_bytes) limit = std::min(limit, opt.max_binding_bytes);
    uint64_t rows_per_chunk = std::max<uint64_t>(1, limit / l.main_row_bytes);
    if (l.scale_row_bytes) {
        uint64_t slimit = caps.max_storage_buffer_range ? caps.max_storage_buffer_range : (1ull << 31);
        if (texel) slimit = std::min<uint64_t>(slimit, caps.max_texel_buffer_elements * 2);
        if (opt.max_binding_bytes) slimit = std::min(slimit, opt.max_binding_bytes);
        slimit -= std::min<uint64_t>(slimit, 3);  // room to round the plane up to whole words (below)
        rows_per_chunk = std::min<uint64_t>(rows_per_chunk, std::max<uint64_t>(1, slimit / l.scale_row_bytes));
    }
    if (l.main_row_bytes > limit)
        return Error::format("weight {}: one row ({} bytes) exceeds the device's binding limit ({} bytes)",
                             w->name_, l.main_row_bytes, limit);
    // Row tiles (weight_layout.h): the texel kernels read quantized planes only so.
    // Chunks hold whole tiles, so that the last one, padded, still fits.
    if (texel && tiles_rows(l)) {
        if (rows_per_chunk < uint64_t(kWeightRowTile))
            return Error::format("weight {}: a tile of {} rows does not fit one binding, which holds {} rows of "
                                 "{} bytes (device limit {} bytes)",
                                 w->name_, kWeightRowTile, rows_per_chunk, l.main_row_bytes, limit);
        l.row_tile = kWeightRowTile;
        rows_per_chunk = rows_per_chunk / uint64_t(kWeightRowTile) * uint64_t(kWeightRowTile);
    }
    // Keep row groups (experts) whole inside one chunk.
    const int64_t group = opt.row_group > 0 ? opt.row_group : (ne[2] * ne[3] > 1 ? ne[1] : 1);
    if (rows_per_chunk < uint64_t(l.rows)) {
        if (uint64_t(group) > rows_per_chunk)
            return Error::format("weight {}: a group of {} rows (one expert) does not fit one binding, which holds {} rows",
                                 w->name_, group, rows_per_chunk);
        rows_per_chunk = rows_per_chunk / uint64_t(group) * uint64_t(group);
    }

    const uint64_t src_row = row_bytes(type, uint64_t(l.cols));
    std::vector<uint8_t> scratch;
    for (int64_t r0 = 0; r0 < l.rows; r0 += int64_t(rows_per_chunk)) {
        WeightChunk c;
        c.row_begin = r0;
        c.n_rows = std::min<int64_t>(int64_t(rows_per_chunk), l.rows - r0);
        const uint64_t stored = uint64_t(stored_rows(l, c.n_rows));
        c.main = TDM_TRY(arena.allocate(stored * l.main_row_bytes, w->name_));
        // Shaders read the scale plane's 16-bit fields as 32-bit words (weights.glsl), so
        // the binding ends on a whole word even where the fields are an odd number.
        if (l.scale_row_bytes)
            c.scale = TDM_TRY(arena.allocate((stored * l.scale_row_bytes + 3) / 4 * 4, w->name_));

        if (l.row_tile) {
            TDM_TRY(upload_tiled(device, l, rows, c, src_row, scratch));
        } else if (l.scale_row_bytes == 0) {
            TDM_TRY(write_device(device, c.main, c.main.size, l.main_row_bytes,
                                 [&](uint8_t* dst, uint64_t off, uint64_t n) {
                                     rows(dst, c.row_begin + int64_t(off / l.main_row_bytes),
                                          int64_t(n / l.main_row_bytes));
                                 }));
        } else {
            // Split planes: produce source rows in pieces, scatter into both planes.
            std::vector<uint8_t> mainbuf, scalebuf;
            TDM_TRY(for_each_piece(rows, c, src_row, scratch, [&](int64_t p0, int64_t pn) -> Status {
                if (c.main.mapped() && c.scale.mapped()) {  // unified memory: repack in place
                    repack_rows(l, scratch.data(), pn, c.main.mapped() + uint64_t(p0) * l.main_row_bytes,
                                c.scale.mapped() + uint64_t(p0) * l.scale_row_bytes);
                    return {};
                }
                mainbuf.resize(uint64_t(pn) * l.main_row_bytes);
                scalebuf.resize(uint64_t(pn) * l.scale_row_bytes);
                repack_rows(l, scratch.data(), pn, mainbuf.data(), scalebuf.data());
                TDM_TRY(write_device(device, c.main.sub(uint64_t(p0) * l.main_row_bytes, mainbuf.size()), mainbuf.size(),
                                     l.main_row_bytes, [&](uint8_t* dst, uint64_t off, uint64_t n) {
                                         std::memcpy(dst, mainbuf.data() + off, n);
                                     }));
                return write_device(device, c.scale.sub(uint64_t(p0) * l.scale_row_bytes, scalebuf.size()),
                                    scalebuf.size(), l.scale_row_bytes, [&](uint8_t* dst, uint64_t off, uint64_t n) {
                                        std::memcpy(dst, scalebuf.data() + off, n);
                                    });
            }));
        }
        if (texel) {
            c.main_view = TDM_TRY(make_view(device, c.main, VK_FORMAT_R32G32B32A32_UINT, w->name_));
            if (c.scale) c.scale_view = TDM_TRY(make_view(device, c.scale, VK_FORMAT_R16_UINT, w->name_));
        }
        w->chunks_.push_back(c);
    }
    return w;
}

Result<std::unique_ptr<DeviceWeight>> DeviceWeight::f32_rows_over(std::string name, const vk::BufferSlice& rows,
                                                                  int64_t cols, int64_t n_rows) {
    std::unique_ptr<DeviceWeight> w(new DeviceWeight());
    w->name_ = std::move(name);
    w->ne_[0] = cols;
    w->ne_[1] = n_rows;
    w->layout_ = TDM_TRY_CTX(weight_layout(DType::F32, cols, n_rows), w->name_);
    if (!rows || rows.size < uint64_t(n_rows) * w->layout_.main_row_bytes)
        return Error::format("weight {}: {} rows of {} f32 do not fit in {} bytes", w->name_, n_rows, cols,
                             rows ? rows.size : 0);
    w->owns_views_ = false;  // none made: kernels read it as a storage buffer
    WeightChunk c;
    c.n_rows = n_rows;
    c.main = rows;
    w->chunks_.push_back(c);
    return w;
}

Result<std::unique_ptr<DeviceWeight>> DeviceWeight::in_host_memory(std::string name, DType type, const int64_t ne[4],
                                                                   const uint8_t* data) {
    if (ne[2] != 1 || ne[3] != 1)
        return Error::format("weight {}: a table in host memory must be 2-D, got {}x{}x{}", name, ne[1], ne[2], ne[3]);
    std::unique_ptr<DeviceWeight> w(new DeviceWeight());
    w->name_ = std::move(name);
    for (int i = 0; i < 4; ++i) w->ne_[i] = ne[i];
    w->layout_ = TDM_TRY_CTX(weight_layout(type, ne[0], ne[1]), w->name_);
    w->host_data_ = data;
    return w;
}

void DeviceWeight::host_row_f32(int64_t r, float* dst) const {
    TDM_ASSERT(host_data_ && r >= 0 && r < layout_.rows);
    dequantize_row(layout_.type, host_data_ + uint64_t(r) * row_bytes(layout_.type, uint64_t(layout_.cols)), dst,
                   layout_.cols);
}

uint64_t DeviceWeight::device_bytes() const {
    uint64_t n = 0;
    for (const auto& c : chunks_) n += c.main.size + c.scale.size;
    return n;
}

Result<std::unique_ptr<DeviceWeight>> DeviceWeight::prefix(const DeviceWeight& w, int64_t n_rows) {
    if (w.ne_[2] != 1 || w.ne_[3] != 1 || n_rows < 1 || n_rows > w.rows())
        return Error::format("weight {}: no prefix of {} rows in a {}x{}x{} weight", w.name_, n_rows, w.ne_[1],
                             w.ne_[2], w.ne_[3]);
    std::unique_ptr<DeviceWeight> v(new DeviceWeight());
    v->device_ = w.device_;
    v->name_ = fmt::format("{}[:{}]", w.name_, n_rows);
    std::copy(w.ne_, w.ne_ + 4, v->ne_);
    v->ne_[1] = n_rows;
    v->layout_ = w.layout_;
    v->layout_.rows = n_rows;
    v->owns_views_ = false;
    for (const WeightChunk& c : w.chunks_) {
        if (c.row_begin >= n_rows) break;
        WeightChunk t = c;
        t.n_rows = std::min(c.n_rows, n_rows - c.row_begin);  // views may cover more rows: never read
        v->chunks_.push_back(t);
    }
    return v;
}

DeviceWeight::~DeviceWeight() {
    if (!device_ || !owns_views_) return;
    for (auto& c : chunks_) {
        if (c.main_view) device_->fn().vkDestroyBufferView(device_->handle(), c.main_view, nullptr);
        if (c.scale_view) device_->fn().vkDestroyBufferView(device_->handle(), c.scale_view, nullptr);
    }
}

}  // namespace tdm
