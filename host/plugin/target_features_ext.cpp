// SPDX-License-Identifier: Apache-2.0
// host/plugin/target_features_ext.cpp: extension "tdm.target_features" version 1
// (tandem/ext/target_features.h): provide() and request() during creates, tap() in a
// target's graph, features() in a draft head's. Every call checks its arguments and
// answers with a status and a message; none throws or aborts on a plugin's mistake.
#include "plugin/target_features_ext.h"

#include "model/feature_taps.h"
#include "plugin/handles.h"

namespace tdm {
namespace {

thread_local TargetCreateScope* t_target_scope = nullptr;
thread_local HeadCreateScope* t_head_scope = nullptr;

// Far above any model's depth; a larger count is a plugin's mistake (an uninitialised value).
constexpr uint32_t kMaxTapLayers = 1u << 16;

tdm_status refuse_tf_call(const char* call, const std::string& why) {
    return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("tdm.target_features {}: {}", call, why));
}

tdm_status api_provide(tdm_model_info* info, uint32_t n_layers) {
    if (!info) return refuse_tf_call("provide", "null model info");
    if (n_layers == 0 || n_layers > kMaxTapLayers)
        return refuse_tf_call("provide", fmt::format("{} layers is implausible", n_layers));
    if (TargetCreateScope* s = t_target_scope; s && s->info == info) s->result = {true, n_layers};
    return TDM_OK;
}

tdm_status api_tap(tdm_graph* g, tdm_tap_kind kind, uint32_t layer, tdm_tensor x) {
    if (!g) return refuse_tf_call("tap", "null graph");
    GraphTaps& t = g->taps;
    if (g->n_embd_target || g->is_encoder) return refuse_tf_call("tap", "only in a target model's build_graph");
    if (!t.provided) return refuse_tf_call("tap", "the model's create provided no taps (call provide() there first)");
    uint32_t point = 0;
    if (kind == TDM_TAP_LAYER_INPUT && layer <= t.n_layers)
        point = layer;
    else if (kind == TDM_TAP_POST_NORM && layer == 0)
        point = t.n_layers + 1;
    else
        return refuse_tf_call("tap", fmt::format("{} is not a point the model provided (layer inputs 0..{} and the "
                                         "post-norm state)",
                                         describe_tap({kind, layer}), t.n_layers));
    if (x.id == 0 || x.id >= g->graph.tensor_count()) return refuse_tf_call("tap", "not a tensor of this graph");
    const Tensor& v = g->graph.tensor(x.id);
    if (v.type != DType::F32 || v.rows() != int64_t(g->batch.n_tokens) || v.ne[2] != 1 || v.ne[3] != 1 ||
        v.cols() != int64_t(t.width))
        return set_last_error(TDM_ERR_SHAPE, fmt::format("tdm.target_features tap of {}: the state is {}, expected "
                                                         "F32 [{}, {}] (n_embd, n_tokens)",
                                                         describe_tap({kind, layer}), g->graph.describe(x.id),
                                                         t.width, g->batch.n_tokens));
    if (t.tapped.size() < t.n_layers + 2) t.tapped.resize(t.n_layers + 2, false);
    if (t.tapped[point]) return refuse_tf_call("tap", fmt::format("{} was tapped twice in one graph", describe_tap({kind, layer})));
    t.tapped[point] = true;
    for (size_t i = 0; i < t.wanted.size(); ++i)
        if (t.wanted[i].kind == kind && t.wanted[i].layer == layer) t.values[i] = x.id;
    return TDM_OK;
}

tdm_status api_request(tdm_draft_head_info* info, const tdm_feature_tap* taps, uint32_t n_taps) {
    if (!info) return refuse_tf_call("request", "null draft head info");
    if (n_taps == 0 || n_taps > TDM_MAX_FEATURE_TAPS)
        return refuse_tf_call("request", fmt::format("{} taps asked for; a head asks for 1..{}", n_taps, TDM_MAX_FEATURE_TAPS));
    if (!taps) return refuse_tf_call("request", "null tap list");
    if (info->hidden != TDM_HIDDEN_NONE)
        return refuse_tf_call("request", "a head with taps reads them alone: its info->hidden must be TDM_HIDDEN_NONE");
    std::vector<tdm_feature_tap> list(taps, taps + n_taps);
    for (size_t i = 0; i < list.size(); ++i) {
        const tdm_feature_tap& a = list[i];
        if (a.kind != TDM_TAP_LAYER_INPUT && a.kind != TDM_TAP_POST_NORM)
            return refuse_tf_call("request", fmt::format("tap {} is of unknown kind {}", i, int(a.kind)));
        if (a.kind == TDM_TAP_POST_NORM && a.layer != 0)
            return refuse_tf_call("request", fmt::format("tap {}: the post-norm state has layer 0, not {}", i, a.layer));
        for (size_t j = 0; j < i; ++j)
            if (list[j].kind == a.kind && list[j].layer == a.layer)
                return refuse_tf_call("request", fmt::format("{} asked for twice (taps {} and {})", describe_tap(a), j, i));
    }
    if (HeadCreateScope* s = t_head_scope; s && s->info == info) {
        if (s->requested) return refuse_tf_call("request", "called twice in one create");
        s->requested = true;
        s->taps = std::move(list);
    }
    return TDM_OK;
}

tdm_status api_features(tdm_graph* g, tdm_tensor* out) {
    if (!g || !out) return refuse_tf_call("features", "null argument");
    if (!g->n_embd_target) return refuse_tf_call("features", "only in a draft head's build_step");
    if (!g->taps.head_requested)
        return refuse_tf_call("features", "this head requested no taps (request() in its create)");
    if (!g->taps.target_step)
        return set_last_error(TDM_ERR_NOT_FOUND,
                              "tdm.target_features features: a chained step reads the head's own "
                              "TDM_OUTPUT_HIDDEN_DRAFT of the step before (TDM_INPUT_TARGET_HIDDEN)");
    // the same tensor TDM_INPUT_TARGET_HIDDEN is in this step: the rows gathered from the
    // target's pass, or the host's input of them
    if (!g->target_hidden)
        g->target_hidden = g->graph.input(DType::F32, {g->n_embd_target, int64_t(g->batch.n_tokens)}, "target_hidden");
    out->id = g->target_hidden;
    return TDM_OK;
}

const tdm_ext_target_features kTargetFeaturesExt = {sizeof(tdm_ext_target_features), api_provide, api_tap,
                                                    api_request, api_features};

}  // namespace

const tdm_ext_target_features* target_features_extension() { return &kTargetFeaturesExt; }

TargetCreateScope::TargetCreateScope(const tdm_model_info* i) : info(i), outer_(t_target_scope) { t_target_scope = this; }
TargetCreateScope::~TargetCreateScope() { t_target_scope = outer_; }

HeadCreateScope::HeadCreateScope(const tdm_draft_head_info* i) : info(i), outer_(t_head_scope) { t_head_scope = this; }
HeadCreateScope::~HeadCreateScope() { t_head_scope = outer_; }

}  // namespace tdm
