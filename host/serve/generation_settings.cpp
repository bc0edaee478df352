// SPDX-License-Identifier: Apache-2.0
// host/serve/generation_settings.cpp
#include "serve/generation_settings.h"

#include <algorithm>

#include "config/logit_bias_text.h"
#include "speculative/drafter.h"

namespace tdm {

std::vector<std::string> spec_types(const Config& c) {
    std::vector<std::string> t;
    for (const std::string& type : c.speculative.type)
        if (type != "none") t.push_back(spec_type_key(type));  // ngram_simple is ngram-simple
    if (t.empty() && !c.model.draft_path.empty()) t.push_back("draft");
    return t;
}

bool speculation_off(const Config& c) {
    return std::find(c.speculative.type.begin(), c.speculative.type.end(), "none") != c.speculative.type.end();
}

SpecParams spec_params(const Config& c) {
    SpecParams p;
    p.draft_max = c.speculative.draft_max;
    p.draft_min = c.speculative.draft_min;
    p.skip_streak = c.speculative.skip_streak;
    p.auto_k = !c.speculative.fixed;  // the goodput controller unless fixed k is asked for
    p.trace_path = c.speculative.trace;
    if (const auto t = draft_tree_shape(c.speculative.draft_tree)) p.tree = {t->steps, t->topk, t->nodes};
    return p;
}

SamplerParams sampler_params(const Config& c) {
    SamplerParams s;
    s.temperature = c.sampling.temperature;
    s.top_k = c.sampling.top_k;
    s.top_p = c.sampling.top_p;
    s.min_p = c.sampling.min_p;
    s.repeat_penalty = c.sampling.repeat_penalty;
    s.repeat_last_n = c.sampling.repeat_last_n;
    s.presence_penalty = c.sampling.presence_penalty;
    s.frequency_penalty = c.sampling.frequency_penalty;
    for (const std::string& text : c.sampling.logit_bias)
        if (auto b = parse_logit_bias(text); b.ok()) s.logit_bias.push_back({b->token, b->bias});  // checked by the config rules
    if (c.sampling.seed >= 0) s.seed = uint64_t(c.sampling.seed);
    return s;
}

}  // namespace tdm
