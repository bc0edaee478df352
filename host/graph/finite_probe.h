/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/finite_probe.h: the per-op NaN/Inf scan behind TANDEM_CHECK_NAN=1.
//
// A compiled graph with probes records, after every op that writes an f32 activation,
// a small dispatch (shaders/finite_probe.comp) that sets one flag per probed tensor
// when the tensor holds a NaN or an infinity. The flags live in host-visible memory
// and are cleared before each run; after the run the first flag set, in node order,
// is the first op whose output became non-finite. The scan happens during the run
// itself, so a model with recurrent state (whose update cannot be replayed) is probed
// exactly as it ran.
// Off unless asked for (CompiledGraph::compile's options): each probe costs a
// dispatch and a barrier.
// Not here: deciding when to look (model/runner.cpp), naming the op's layer
// (graph/op_location.h).
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "graph/graph.h"

namespace tdm {

struct RecordContext;

// A probed op result: the node that wrote it.
struct ProbedTensor {
    size_t node;
    TensorId tensor;
};

class FiniteProbes {
public:
    // One probe per f32 activation result of every node that does work.
    static Result<std::unique_ptr<FiniteProbes>> create(vk::Device& device, const Graph& graph);

    // The probe slots of node `node` (empty for a view or a non-f32 result).
    std::span<const uint32_t> slots_of(size_t node) const;
    const ProbedTensor& probe(uint32_t slot) const { return probes_[slot]; }
    // The flag the probe in `slot` writes (for hazard tracking).
    vk::BufferSlice flag(uint32_t slot) const;

    // Records the scan of `slot`'s tensor; the caller orders it after the node.
    Status record(RecordContext& ctx, uint32_t slot) const;
    // Clears every flag; call before each submit.
    void reset() const;
    // After a run: the first probed tensor, in node order, holding a NaN or infinity.
    std::optional<ProbedTensor> first_non_finite() const;

private:
    FiniteProbes() = default;
    std::vector<ProbedTensor> probes_;
    std::vector<std::vector<uint32_t>> by_node_;
    std::unique_ptr<vk::Buffer> flags_;
};

}  // namespace tdm
