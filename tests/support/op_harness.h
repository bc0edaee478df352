/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/op_harness.h: build a small graph from host vectors, run it on the
// test device, read results back. Used by the op and batch-invariance tests.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "graph/executor.h"
#include "graph/weight.h"

namespace tdm::test {

// A paged KV layer for tests: pools filled through kv_store, block table chosen
// by the test (deliberately non-contiguous), f16 or f32 storage.
struct TestKvLayer {
    std::unique_ptr<vk::Buffer> k, v, table;
    std::vector<VkBufferView> views;
    KvLayerBinding binding;
    vk::Device* device = nullptr;
    ~TestKvLayer();
};
// n_seq sequences, each with the given block list.
std::unique_ptr<TestKvLayer> make_test_kv(vk::Device& d, uint32_t n_kv_head, uint32_t dk, uint32_t dv,
                                          uint32_t block_size, uint32_t n_blocks,
                                          const std::vector<std::vector<int32_t>>& block_lists, bool f16);

// A recurrent state for tests: n_seq sequence slots of n_checkpoints checkpoints
// of n_f32 floats in one device buffer (the layout of StateBinding), zero-filled.
struct TestState {
    std::unique_ptr<vk::Buffer> buffer;
    StateBinding binding;
    vk::Device* device = nullptr;

    // Checkpoint `ckpt` of sequence `seq`: n_f32 floats.
    std::vector<float> read(int seq, int ckpt) const;
    void write(int seq, int ckpt, const std::vector<float>& values);
    // The whole buffer, every sequence and checkpoint.
    std::vector<float> read_all() const;
};
std::unique_ptr<TestState> make_test_state(vk::Device& d, uint64_t n_f32, uint32_t n_checkpoints, uint32_t n_seq);

class OpHarness {
public:
    OpHarness(vk::Device& device, vk::PipelineManager& pipelines);

    Graph& graph() { return graph_; }
    TensorId input_f32(std::vector<int64_t> ne, std::vector<float> data, const char* name = "x");
    TensorId input_i32(std::vector<int64_t> ne, std::vector<int32_t> data, const char* name = "ids");
    // Raw GGUF-layout bytes of a [rows x cols] weight.
    TensorId weight(DType t, int64_t cols, int64_t rows, const std::vector<uint8_t>& bytes,
                    const WeightUploadOptions& opt = {});
    // A weight of any shape (ne in ggml order, up to 4 dims), e.g. a [K, M, E] expert stack.
    TensorId weight_nd(DType t, std::vector<int64_t> ne, const std::vector<uint8_t>& bytes,
                       const WeightUploadOptions& opt = {});
    TensorId op(tdm_op op, std::vector<TensorId> in, std::vector<int32_t> i = {}, std::vector<float> f = {});
    // Sets the batch positions / sequence ids used by kv_store and attention.
    // Returns the sequence ids input.
    TensorId batch(std::vector<int32_t> positions, std::vector<int32_t> seq_ids);
    // Sets the state_io input of state-updating ops for a batch of one sequence, given as
    // n + 1 entries: the checkpoint read, then the one written after each row (-1 = none).
    // Returns it (laid out as graph/graph.h's StateBinding says).
    TensorId state_io(std::vector<int32_t> io);
    // The same for a batch of segments (runs of rows of one sequence): `writes` per row,
    // and per segment its first row and the checkpoint it reads.
    TensorId state_io_segments(std::vector<int32_t> writes, std::vector<std::pair<int32_t, int32_t>> segments);

    // Compiles with these outputs, writes the inputs, runs. Asserts on error.
    void run(std::vector<TensorId> outputs, const CompileOptions& options = {});
    void rerun();  // runs the compiled graph again (inputs unchanged)
    std::vector<float> f32(TensorId t) const;
    std::vector<int32_t> i32(TensorId t) const;
    CompiledGraph& compiled() { return *compiled_; }

private:
    vk::Device& device_;
    vk::PipelineManager& pipelines_;
    Graph graph_;
    vk::Arena arena_;
    std::vector<std::unique_ptr<DeviceWeight>> weights_;
    std::map<TensorId, std::vector<float>> f32_inputs_;
    std::map<TensorId, std::vector<int32_t>> i32_inputs_;
    std::unique_ptr<CompiledGraph> compiled_;
};

}  // namespace tdm::test
