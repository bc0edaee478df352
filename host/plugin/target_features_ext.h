/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/target_features_ext.h: the host's side of extension "tdm.target_features"
// (tandem/ext/target_features.h): its function table, what one graph records of it
// (GraphTaps, a member of tdm_graph), and how the host learns what a target's create
// provided and what a head's create requested (the create scopes below).
// Not here: the tap lists a hidden point stands for and the concatenation of a target
// graph's taps (model/feature_taps.h), the refusal of a head its target cannot feed
// (speculative/draft_head.cpp).
#pragma once

#include <tandem/ext/target_features.h>

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace tdm {

// What a graph records of tdm.target_features.
struct GraphTaps {
    // A target graph: the points its model's create provided (layer inputs 0..n_layers and
    // the post-norm state), the points the attached head asked for, in its order, and for
    // each of those what tap() handed over (kNoTensor until tapped).
    bool provided = false;
    uint32_t n_layers = 0;
    uint32_t width = 0;  // every state's: the model's n_embd
    std::vector<tdm_feature_tap> wanted;
    std::vector<TensorId> values;
    std::vector<bool> tapped;  // per point (layer inputs 0..n_layers, then post-norm): tapped once
    // A draft head's graph: the head requested taps, and the step being built reads the
    // target's rows (the round's first step), so features() is its TDM_INPUT_TARGET_HIDDEN.
    bool head_requested = false;
    bool target_step = false;
};

// Extension "tdm.target_features" version 1.
const tdm_ext_target_features* target_features_extension();

// What a target's create said through provide().
struct ProvidedTaps {
    bool provided = false;
    uint32_t n_layers = 0;  // layer inputs 0..n_layers (n_layers: the last layer's output)
};

// While one lives, provide() calls with `info` on this thread are recorded in result.
// The host opens one around each architecture create whose answer it keeps; a provide()
// outside any (a create run to print hyper-parameters) is checked and otherwise ignored.
class TargetCreateScope {
public:
    explicit TargetCreateScope(const tdm_model_info* info);
    ~TargetCreateScope();
    TargetCreateScope(const TargetCreateScope&) = delete;
    TargetCreateScope& operator=(const TargetCreateScope&) = delete;

    const tdm_model_info* info;
    ProvidedTaps result;

private:
    TargetCreateScope* outer_;
};

// The same for a draft head's create and request(): `taps` is what it asked for.
class HeadCreateScope {
public:
    explicit HeadCreateScope(const tdm_draft_head_info* info);
    ~HeadCreateScope();
    HeadCreateScope(const HeadCreateScope&) = delete;
    HeadCreateScope& operator=(const HeadCreateScope&) = delete;

    const tdm_draft_head_info* info;
    bool requested = false;
    std::vector<tdm_feature_tap> taps;

private:
    HeadCreateScope* outer_;
};

}  // namespace tdm
