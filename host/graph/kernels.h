// host/graph/kernels.h: recording of each op's dispatches (pipeline choice, push
// constants, bindings, workgroup counts). One function per op family in
// kernels.cpp; the executor calls record_node() for every node in order.
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

}  // namespace tdm
