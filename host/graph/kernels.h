// host/graph/kernels.h: recording of each op's dispatches (pipeline choice, push
// constants, bindings, workgroup counts). One function per op family in
// kernels.cpp (and kernels_recurrent.cpp, kernels_moe.cpp); the executor calls
// record_node() for every node in order.
#pragma once

#include "graph/executor.h"

namespace tdm {

struct RecordContext {
    vk::Device& device;
    vk::PipelineManager& pipelines;
    vk::CommandBuffer& cb;
    const Graph& graph;
    const CompiledGraph& compiled;
};

Status record_node(RecordContext& ctx, const Node& node);

// Recurrent-state ops (kernels_recurrent.cpp).
Status record_conv1d_causal(RecordContext& ctx, const Node& node);
Status record_gated_delta_rule(RecordContext& ctx, const Node& node);
// Mixture-of-experts ops (kernels_moe.cpp).
Status record_matmul_id(RecordContext& ctx, const Node& node);
Status record_moe_sum(RecordContext& ctx, const Node& node);

}  // namespace tdm
