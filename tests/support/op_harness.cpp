// SPDX-License-Identifier: Apache-2.0
// tests/support/op_harness.cpp
#include "support/op_harness.h"

#include <gtest/gtest.h>

#include <cstring>

namespace tdm::test {

TestKvLayer::~TestKvLayer() {
    for (VkBufferView v : views) device->fn().vkDestroyBufferView(device->handle(), v, nullptr);
}

std::unique_ptr<TestKvLayer> make_test_kv(vk::Device& d, uint32_t n_kv_head, uint32_t dk, uint32_t dv,
                                          uint32_t block_size, uint32_t n_blocks,
                                          const std::vector<std::vector<int32_t>>& block_lists, bool f16) {
    auto kv = std::make_unique<TestKvLayer>();
    kv->device = &d;
    const uint64_t es = f16 ? 2 : 4;
    auto k = vk::Buffer::create(d, uint64_t(n_blocks) * block_size * n_kv_head * dk * es, vk::MemoryKind::device, "test K");
    auto v = vk::Buffer::create(d, uint64_t(n_blocks) * block_size * n_kv_head * dv * es, vk::MemoryKind::device, "test V");
    uint32_t max_blocks = 0;
    for (const auto& l : block_lists) max_blocks = std::max<uint32_t>(max_blocks, uint32_t(l.size()));
    std::vector<int32_t> table(block_lists.size() * max_blocks, 0);
    for (size_t s = 0; s < block_lists.size(); ++s)
        for (size_t b = 0; b < block_lists[s].size(); ++b) table[s * max_blocks + b] = block_lists[s][b];
    auto t = vk::Buffer::create(d, table.size() * 4, vk::MemoryKind::device, "test block table");
    EXPECT_TRUE(k.ok() && v.ok() && t.ok());
    kv->k = std::move(k).value();
    kv->v = std::move(v).value();
    kv->table = std::move(t).value();
    vk::BufferSlice ts{kv->table.get(), 0, table.size() * 4};
    EXPECT_TRUE(write_device(d, ts, ts.size, 4, [&](uint8_t* dst, uint64_t off, uint64_t n) {
                    std::memcpy(dst, reinterpret_cast<const uint8_t*>(table.data()) + off, n);
                }).ok());
    KvLayerBinding& b = kv->binding;
    b.k = {kv->k.get(), 0, kv->k->size()};
    b.v = {kv->v.get(), 0, kv->v->size()};
    b.block_table = ts;
    b.f16 = f16;
    b.n_kv_head = n_kv_head;
    b.dk = dk;
    b.dv = dv;
    b.block_size = block_size;
    b.max_blocks = max_blocks;
    b.name = "test kv";
    if (d.caps().prefer_texel_weights) {
        for (auto* pair : {&b.k, &b.v}) {
            VkBufferViewCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
            ci.buffer = pair->handle();
            ci.format = f16 ? VK_FORMAT_R16G16B16A16_SFLOAT : VK_FORMAT_R32G32B32A32_SFLOAT;
            ci.offset = 0;
            ci.range = pair->size;
            VkBufferView view;
            EXPECT_EQ(d.fn().vkCreateBufferView(d.handle(), &ci, nullptr, &view), VK_SUCCESS);
            kv->views.push_back(view);
        }
        b.k_view = kv->views[0];
        b.v_view = kv->views[1];
    }
    return kv;
}

std::unique_ptr<TestState> make_test_state(vk::Device& d, uint64_t n_f32, uint32_t n_checkpoints, uint32_t n_seq) {
    auto st = std::make_unique<TestState>();
    st->device = &d;
    const uint64_t bytes = uint64_t(n_seq) * n_checkpoints * n_f32 * 4;
    auto b = vk::Buffer::create(d, bytes, vk::MemoryKind::device, "test state");
    EXPECT_TRUE(b.ok());
    st->buffer = std::move(b).value();
    st->binding.buffer = {st->buffer.get(), 0, bytes};
    st->binding.n_f32 = n_f32;
    st->binding.n_checkpoints = n_checkpoints;
    st->binding.name = "test state";
    EXPECT_TRUE(write_device(d, st->binding.buffer, bytes, 4, [](uint8_t* dst, uint64_t, uint64_t n) {
                    std::memset(dst, 0, n);
                }).ok());
    return st;
}

std::vector<float> TestState::read(int seq, int ckpt) const {
    const uint64_t bytes = binding.n_f32 * 4;
    std::vector<float> v(binding.n_f32);
    const uint64_t off = (uint64_t(seq) * binding.n_checkpoints + uint64_t(ckpt)) * bytes;
    EXPECT_TRUE(read_device(*device, binding.buffer.sub(off, bytes), v.data(), bytes).ok());
    return v;
}

void TestState::write(int seq, int ckpt, const std::vector<float>& values) {
    ASSERT_EQ(values.size(), binding.n_f32);
    const uint64_t bytes = binding.n_f32 * 4;
    const uint64_t off = (uint64_t(seq) * binding.n_checkpoints + uint64_t(ckpt)) * bytes;
    EXPECT_TRUE(write_device(*device, binding.buffer.sub(off, bytes), bytes, 4, [&](uint8_t* dst, uint64_t o, uint64_t n) {
                    std::memcpy(dst, reinterpret_cast<const uint8_t*>(values.data()) + o, n);
                }).ok());
}

std::vector<float> TestState::read_all() const {
    std::vector<float> v(binding.buffer.size / 4);
    EXPECT_TRUE(read_device(*device, binding.buffer, v.data(), binding.buffer.size).ok());
    return v;
}

OpHarness::OpHarness(vk::Device& device, vk::PipelineManager& pipelines)
    : device_(device), pipelines_(pipelines), arena_(device, vk::MemoryKind::device, "test weights", 4 << 20) {}

TensorId OpHarness::input_f32(std::vector<int64_t> ne, std::vector<float> data, const char* name) {
    const TensorId t = graph_.input(DType::F32, ne, name);
    EXPECT_EQ(int64_t(data.size()), graph_.tensor(t).elements());
    f32_inputs_[t] = std::move(data);
    return t;
}

TensorId OpHarness::input_i32(std::vector<int64_t> ne, std::vector<int32_t> data, const char* name) {
    const TensorId t = graph_.input(DType::I32, ne, name);
    EXPECT_EQ(int64_t(data.size()), graph_.tensor(t).elements());
    i32_inputs_[t] = std::move(data);
    return t;
}

TensorId OpHarness::weight(DType t, int64_t cols, int64_t rows, const std::vector<uint8_t>& bytes,
                           const WeightUploadOptions& opt) {
    return weight_nd(t, {cols, rows}, bytes, opt);
}

TensorId OpHarness::weight_nd(DType t, std::vector<int64_t> ne, const std::vector<uint8_t>& bytes,
                             const WeightUploadOptions& opt) {
    int64_t n4[4] = {1, 1, 1, 1};
    for (size_t k = 0; k < ne.size() && k < 4; ++k) n4[k] = ne[k];
    auto w = DeviceWeight::upload(device_, arena_, "w", t, n4, bytes.data(), opt);
    EXPECT_TRUE(w.ok()) << w.error().message();
    if (!w.ok()) return kNoTensor;
    weights_.push_back(std::move(w).value());
    return graph_.weight(weights_.back().get());
}

TensorId OpHarness::op(tdm_op op, std::vector<TensorId> in, std::vector<int32_t> i, std::vector<float> f) {
    OpDesc d;
    d.op = op;
    for (size_t k = 0; k < in.size(); ++k) d.in[k] = in[k];
    d.n_in = int(in.size());
    for (size_t k = 0; k < i.size(); ++k) d.i[k] = i[k];
    for (size_t k = 0; k < f.size(); ++k) d.f[k] = f[k];
    auto r = graph_.op(d);
    EXPECT_TRUE(r.ok()) << r.error().message();
    return r.ok() ? *r : kNoTensor;
}

TensorId OpHarness::batch(std::vector<int32_t> positions, std::vector<int32_t> seq_ids) {
    const int64_t n = int64_t(positions.size());
    const TensorId p = input_i32({n}, std::move(positions), "positions");
    const TensorId s = input_i32({n}, std::move(seq_ids), "seq_ids");
    graph_.set_batch(p, s);
    return s;
}

TensorId OpHarness::state_io(std::vector<int32_t> io) {
    if (io.empty()) io.push_back(-1);
    const int32_t read = io[0];
    return state_io_segments(std::vector<int32_t>(io.begin() + 1, io.end()), {{0, read}});
}

TensorId OpHarness::state_io_segments(std::vector<int32_t> writes, std::vector<std::pair<int32_t, int32_t>> segments) {
    const int64_t n = int64_t(writes.size());
    std::vector<int32_t> io(size_t(state_io_entries(n)), -1);
    io[0] = int32_t(segments.size());
    for (int64_t i = 0; i < n; ++i) io[size_t(1 + i)] = writes[size_t(i)];
    for (size_t j = 0; j < segments.size() && int64_t(j) < n; ++j) {
        io[size_t(1 + n + 2 * int64_t(j))] = segments[j].first;
        io[size_t(2 + n + 2 * int64_t(j))] = segments[j].second;
    }
    const int64_t entries = int64_t(io.size());
    const TensorId t = input_i32({entries}, std::move(io), "state_io");
    graph_.set_state_io(t);
    return t;
}

void OpHarness::run(std::vector<TensorId> outputs, const CompileOptions& options) {
    for (TensorId o : outputs) ASSERT_TRUE(graph_.mark_output(o).ok());
    auto cg = CompiledGraph::compile(device_, pipelines_, std::move(graph_), options);
    ASSERT_TRUE(cg.ok()) << cg.error().message();
    compiled_ = std::move(cg).value();
    for (auto& [t, v] : f32_inputs_) std::memcpy(compiled_->input_data(t), v.data(), v.size() * 4);
    for (auto& [t, v] : i32_inputs_) std::memcpy(compiled_->input_data(t), v.data(), v.size() * 4);
    rerun();
}

void OpHarness::rerun() {
    auto st = compiled_->run();
    ASSERT_TRUE(st.ok()) << st.error().message();
}

std::vector<float> OpHarness::f32(TensorId t) const {
    const Tensor& x = compiled_->graph().tensor(t);
    const float* p = compiled_->output_as<float>(t);
    return std::vector<float>(p, p + x.elements());
}

std::vector<int32_t> OpHarness::i32(TensorId t) const {
    const Tensor& x = compiled_->graph().tensor(t);
    const int32_t* p = compiled_->output_as<int32_t>(t);
    return std::vector<int32_t>(p, p + x.elements());
}

}  // namespace tdm::test
