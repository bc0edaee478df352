// SPDX-License-Identifier: Apache-2.0
// host/model/feature_taps.cpp
#include "model/feature_taps.h"

#include <deque>
#include <mutex>
#include <vector>

#include "ops/op_def.h"
#include "plugin/handles.h"

namespace tdm {
namespace {

bool same_taps(std::span<const tdm_feature_tap> a, std::span<const tdm_feature_tap> b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].kind != b[i].kind || a[i].layer != b[i].layer) return false;
    return true;
}

// Lists never move once interned (a deque keeps its elements in place): taps_of() hands out
// spans of them without holding the lock.
struct TapLists {
    std::mutex mutex;
    std::deque<std::vector<tdm_feature_tap>> lists;
};

TapLists& tap_lists() {
    static TapLists t;
    return t;
}

}  // namespace

tdm_hidden_point hidden_point_for_taps(std::span<const tdm_feature_tap> taps) {
    TapLists& t = tap_lists();
    std::lock_guard lock(t.mutex);
    for (size_t i = 0; i < t.lists.size(); ++i)
        if (same_taps(t.lists[i], taps)) return tdm_hidden_point(kFirstTapPoint + i);
    t.lists.emplace_back(taps.begin(), taps.end());
    return tdm_hidden_point(kFirstTapPoint + t.lists.size() - 1);
}

std::span<const tdm_feature_tap> taps_of(tdm_hidden_point p) {
    if (uint32_t(p) < kFirstTapPoint) return {};
    TapLists& t = tap_lists();
    std::lock_guard lock(t.mutex);
    const size_t i = uint32_t(p) - kFirstTapPoint;
    if (i >= t.lists.size()) return {};
    return t.lists[i];
}

std::string describe_tap(const tdm_feature_tap& t) {
    switch (t.kind) {
        case TDM_TAP_LAYER_INPUT: return fmt::format("the input of layer {}", t.layer);
        case TDM_TAP_POST_NORM: return t.layer == 0 ? "the post-norm state" : fmt::format("post-norm layer {}", t.layer);
        default: break;
    }
    return fmt::format("a tap of unknown kind {}", int(t.kind));
}

Result<TensorId> concat_feature_taps(tdm_graph& g, const std::string& arch) {
    const GraphTaps& t = g.taps;
    TensorId out = kNoTensor;
    for (size_t i = 0; i < t.wanted.size(); ++i) {
        if (!t.values[i])
            return Error::format("the {} target's graph never tapped {}, which its create provided (tdm.target_features "
                                 "tap in build_graph)",
                                 arch, describe_tap(t.wanted[i]));
        if (!out) {
            out = t.values[i];
            continue;
        }
        OpDesc cat;
        cat.op = TDM_OP_CONCAT;
        cat.in[0] = out;
        cat.in[1] = t.values[i];
        cat.n_in = 2;
        cat.name = "target_features";
        out = TDM_TRY(g.graph.op(cat));
    }
    if (!out) return Error("internal: a feature-tap hidden point without taps");
    return out;
}

Status check_taps_provided(std::span<const tdm_feature_tap> taps, const std::string& head, const ProvidedTaps& p,
                           const std::string& arch) {
    for (const tdm_feature_tap& t : taps) {
        if (!p.provided)
            return Error::format("the {} head asks for {}; the {} target provides no taps (its plugin does not call "
                                 "tdm.target_features provide())",
                                 head, describe_tap(t), arch);
        const bool ok = (t.kind == TDM_TAP_LAYER_INPUT && t.layer <= p.n_layers) ||
                        (t.kind == TDM_TAP_POST_NORM && t.layer == 0);
        if (!ok)
            return Error::format("the {} head asks for {}; the {} target provides layers 0..{} (layer {}: the last "
                                 "layer's output) and the post-norm state",
                                 head, describe_tap(t), arch, p.n_layers, p.n_layers);
    }
    return {};
}

}  // namespace tdm
