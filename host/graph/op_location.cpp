// SPDX-License-Identifier: Apache-2.0
// host/graph/op_location.cpp
#include "graph/op_location.h"

#include <algorithm>
#include <vector>

namespace tdm {
namespace {

bool all_digits(std::string_view s) {
    if (s.empty()) return false;
    for (char c : s)
        if (c < '0' || c > '9') return false;
    return true;
}

// The weight inputs of a node, in input order.
std::vector<const Tensor*> weights_read(const Graph& g, const Node& n) {
    std::vector<const Tensor*> w;
    for (int k = 0; k < n.desc.n_in; ++k) {
        const Tensor& t = g.tensor(n.desc.in[k]);
        if (t.kind == TensorKind::weight) w.push_back(&t);
    }
    return w;
}

}  // namespace

std::string layer_of_weight(std::string_view name) {
    size_t begin = 0;
    while (begin <= name.size()) {
        size_t end = name.find('.', begin);
        if (end == std::string_view::npos) end = name.size();
        if (all_digits(name.substr(begin, end - begin))) return std::string(name.substr(0, end));
        begin = end + 1;
    }
    for (std::string_view suffix : {".weight", ".bias"})
        if (name.size() > suffix.size() && name.ends_with(suffix)) return std::string(name.substr(0, name.size() - suffix.size()));
    return std::string(name);
}

std::string layer_of_node(const Graph& g, size_t node) {
    // One pass in execution order: a node's layer is that of its first weight, or else
    // that of the latest node it reads from (the residual stream carries no weight).
    const auto& nodes = g.nodes();
    std::vector<std::string> layer(node + 1);
    for (size_t i = 0; i <= node; ++i) {
        const Node& n = nodes[i];
        const auto w = weights_read(g, n);
        if (!w.empty()) {
            layer[i] = layer_of_weight(w.front()->name);
            continue;
        }
        int latest = -1;
        for (int k = 0; k < n.desc.n_in; ++k) latest = std::max(latest, g.tensor(n.desc.in[k]).producer);
        if (latest >= 0 && size_t(latest) < i) layer[i] = layer[size_t(latest)];
    }
    return layer[node];
}

std::string describe_op_location(const Graph& g, size_t node, TensorId output) {
    const Node& n = g.nodes()[node];
    std::string reads;
    for (const Tensor* w : weights_read(g, n)) reads += (reads.empty() ? ", reads " : " and ") + w->name;
    const std::string layer = layer_of_node(g, node);
    return fmt::format("{}{} (op {}, output {}{})", layer.empty() ? "" : layer + " ", n.desc.name,
                       op_name(n.desc.op), g.describe(output), reads);
}

}  // namespace tdm
