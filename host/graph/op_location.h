/* SPDX-License-Identifier: Apache-2.0 */
// host/graph/op_location.h: where in the model an op of a graph sits, for messages.
//
// Plugins name their ops ("attn_out", "ffn_act") but build graphs through the ABI
// without telling the host which layer an op belongs to. The weights tell: a weight's
// name is the file's tensor name, and the part up to its first all-digit component is
// the layer ("blk.3" of blk.3.attn_output.weight, "model.layers.3" of an HF name). An
// op that reads no weight (norm-free activations, attention, elementwise) belongs
// where the most recent op it reads from belongs. Weights outside any layer name
// themselves ("output_norm", "token_embd").
// Not here: finding a non-finite op (graph/finite_probe.h).
#pragma once

#include <string>
#include <string_view>

#include "graph/graph.h"

namespace tdm {

// "blk.3" for "blk.3.attn_q.weight"; "output_norm" for "output_norm.weight".
std::string layer_of_weight(std::string_view weight_name);

// The layer (or top-level weight) node `node` of `graph` belongs to; empty for an op
// that depends on no weight at all.
std::string layer_of_node(const Graph& graph, size_t node);

// "blk.3 attn_out (op matmul, output 'attn_out' f32 [64, 2], reads blk.3.attn_output.weight)";
// without a layer, the op's name comes first.
std::string describe_op_location(const Graph& graph, size_t node, TensorId output);

}  // namespace tdm
