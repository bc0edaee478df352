// SPDX-License-Identifier: Apache-2.0
// host/sampling/sampler.cpp: the sampling chain and the speculative acceptance rule.
// Semantics follow llama.cpp's src/llama-sampling.cpp (logit_bias, penalties, top_k, top_p,
// min_p, temp, dist) so that a user's settings mean the same thing in both; the data layout does
// not (we keep ids sorted in the result and avoid sorting the vocabulary where we can).
#include "sampling/sampler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

namespace tdm {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// NaN would break the strict ordering the sorts rely on; +inf would turn the softmax into
// inf - inf. Neither should come out of a model, but a broken kernel must not crash us.
float sanitize(float x) {
    if (std::isnan(x)) return kNegInf;
    if (x == std::numeric_limits<float>::infinity()) return FLT_MAX;
    return x;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Parameters, distributions, draws
// ---------------------------------------------------------------------------------------

Status validate(const SamplerParams& p) {
    auto finite = [](const char* name, float v) -> Status {
        if (!std::isfinite(v)) return Error::format("sampler: {} must be a finite number, got {}", name, v);
        return {};
    };
    TDM_TRY(finite("temperature", p.temperature));
    TDM_TRY(finite("top_p", p.top_p));
    TDM_TRY(finite("min_p", p.min_p));
    TDM_TRY(finite("repeat_penalty", p.repeat_penalty));
    // min_p > 1 would ask for tokens likelier than the likeliest one and leave none.
    if (p.min_p > 1.0f) return Error::format("sampler: min_p must be at most 1, got {}", p.min_p);
    // The penalty divides logits; 0 or a negative value has no meaning there.
    if (p.repeat_penalty <= 0.0f)
        return Error::format("sampler: repeat_penalty must be > 0, got {}", p.repeat_penalty);
    if (p.repeat_last_n < -1)
        return Error::format("sampler: repeat_last_n must be -1 (all), 0 (off) or positive, got {}",
                             p.repeat_last_n);
    TDM_TRY(finite("presence_penalty", p.presence_penalty));
    TDM_TRY(finite("frequency_penalty", p.frequency_penalty));
    constexpr float kPen = kMaxPresenceFrequencyPenalty;
    if (std::fabs(p.presence_penalty) > kPen)
        return Error::format("sampler: presence_penalty must be between -{} and {}, got {}", kPen, kPen,
                             p.presence_penalty);
    if (std::fabs(p.frequency_penalty) > kPen)
        return Error::format("sampler: frequency_penalty must be between -{} and {}, got {}", kPen, kPen,
                             p.frequency_penalty);
    if (p.logit_bias.size() > kMaxLogitBiasEntries)
        return Error::format("sampler: logit_bias has {} entries; at most {} are accepted", p.logit_bias.size(),
                             kMaxLogitBiasEntries);
    for (const TokenBias& b : p.logit_bias) {
        if (b.token < 0) return Error::format("sampler: logit_bias names token {}, which is negative", b.token);
        if (!std::isfinite(b.bias) || std::fabs(b.bias) > kMaxLogitBias)
            return Error::format("sampler: the logit_bias of token {} must be between -{} and {}, got {}", b.token,
                                 kMaxLogitBias, kMaxLogitBias, b.bias);
    }
    return {};
}

bool argmax_of_raw_logits(const SamplerParams& p) {
    return p.temperature <= 0.0f && p.repeat_penalty == 1.0f && p.presence_penalty == 0.0f &&
           p.frequency_penalty == 0.0f && p.logit_bias.empty();
}

float TokenDistribution::prob(int32_t id) const {
    auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (it == ids.end() || *it != id) return 0.0f;
    return probs[static_cast<size_t>(it - ids.begin())];
}

int32_t draw(const TokenDistribution& d, Rng& rng) {
    TDM_ASSERT(!d.ids.empty() && d.ids.size() == d.probs.size());
    double total = 0.0;
    for (float p : d.probs) total += p;
    const double target = rng.uniform() * total;
    // Summed in the same order as `total`, so the walk reaches total exactly at the end and
    // stops before it since target < total; last_positive only guards against rounding.
    double cum = 0.0;
    int32_t last_positive = -1;
    for (size_t i = 0; i < d.ids.size(); ++i) {
        if (!(d.probs[i] > 0.0f)) continue;
        cum += d.probs[i];
        last_positive = d.ids[i];
        if (cum > target) return d.ids[i];
    }
    TDM_ASSERT_MSG(last_positive >= 0, "token distribution has no positive probability");
    return last_positive;
}

// ---------------------------------------------------------------------------------------
// Sampler
// ---------------------------------------------------------------------------------------

Result<Sampler> Sampler::create(const SamplerParams& params) {
    TDM_TRY(validate(params));
    uint64_t seed = 0;
    if (params.seed) {
        seed = *params.seed;
    } else {
        std::random_device rd;
        seed = (static_cast<uint64_t>(rd()) << 32) ^ rd();
    }
    return Sampler(params, seed);
}

// Every token that bias or a penalty touches gets one entry in penalised_ (sorted by id)
// with its adjusted logit, computed in llama.cpp's order: bias first (llama.cpp's
// logit-bias sampler comes before its penalties), then the repetition penalty, which
// divides a positive logit and multiplies a negative one so that it always moves towards
// "less likely", then OpenAI's frequency and presence penalties. Nothing else is written:
// the row itself stays read-only, and a row with no adjustment costs nothing here.
void Sampler::collect_penalties(const float* logits, int n_vocab, std::span<const int32_t> history) {
    penalised_.clear();
    adjust_.clear();
    const auto valid = [n_vocab](int32_t t) { return t >= 0 && t < n_vocab; };
    for (const TokenBias& b : params_.logit_bias)
        if (valid(b.token)) adjust_.push_back({b.token, b.bias, false, 0});
    const float penalty = params_.repeat_penalty;
    if (penalty != 1.0f && params_.repeat_last_n != 0) {
        size_t n = history.size();
        if (params_.repeat_last_n > 0) n = std::min(n, static_cast<size_t>(params_.repeat_last_n));
        for (int32_t t : history.last(n))
            if (valid(t)) adjust_.push_back({t, 0.0f, true, 0});
    }
    const float presence = params_.presence_penalty, frequency = params_.frequency_penalty;
    if (presence != 0.0f || frequency != 0.0f)
        for (int32_t t : history.subspan(std::min(prompt_length_, history.size())))
            if (valid(t)) adjust_.push_back({t, 0.0f, false, 1});
    if (adjust_.empty()) return;
    // Stable: the biases of one token add up in the order they were given, on every platform.
    std::stable_sort(adjust_.begin(), adjust_.end(),
                     [](const Adjustment& a, const Adjustment& b) { return a.id < b.id; });
    for (size_t i = 0; i < adjust_.size();) {
        Adjustment m = adjust_[i];
        for (++i; i < adjust_.size() && adjust_[i].id == m.id; ++i) {
            m.bias += adjust_[i].bias;
            m.repeated = m.repeated || adjust_[i].repeated;
            m.count += adjust_[i].count;
        }
        float l = sanitize(logits[m.id]) + m.bias;
        if (m.repeated) l = l <= 0.0f ? l * penalty : l / penalty;
        if (m.count > 0) l -= static_cast<float>(m.count) * frequency + presence;
        penalised_.push_back({m.id, l});
    }
}

// One pass over the row with the penalised values patched in (penalised_ is sorted by id,
// so a cursor suffices). Strict '>' keeps the lowest id among equal maxima.
int32_t Sampler::penalised_argmax(const float* logits, int n_vocab) const {
    int32_t best_id = 0;
    float best = kNegInf;
    size_t j = 0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        float v = sanitize(logits[i]);
        if (j < penalised_.size() && penalised_[j].id == i) v = penalised_[j++].logit;
        if (v > best) {
            best = v;
            best_id = i;
        }
    }
    return best_id;
}

namespace {

// A strict total order (logits are never NaN here): the top k, and the order of a sorted
// prefix, are the same whatever algorithm the standard library uses.
bool by_logit(const auto& a, const auto& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

template <class It>
void sort_prefix(It begin, It mid, It end) {
    if (mid != end) std::nth_element(begin, mid, end, [](const auto& a, const auto& b) { return by_logit(a, b); });
    std::sort(begin, mid, [](const auto& a, const auto& b) { return by_logit(a, b); });
}

template <class C>
float max_logit(const C& cand) {
    float m = kNegInf;
    for (const auto& c : cand) m = std::max(m, c.logit);
    return m;
}

}  // namespace

// Top-k straight from the logits: one pass keeping a heap of the k best so far, whose
// front is the worst of them. Most tokens lose one comparison against the front, so this
// reads the row once and never writes a vocabulary-sized candidate list.
void Sampler::select_top_k(const float* logits, int n_vocab) {
    const auto better = [](const Candidate& a, const Candidate& b) { return by_logit(a, b); };
    const size_t k = static_cast<size_t>(params_.top_k);
    cand_.clear();
    size_t j = 0;
    for (int32_t i = 0; i < n_vocab; ++i) {
        Candidate c{i, sanitize(logits[i])};
        if (j < penalised_.size() && penalised_[j].id == i) c.logit = penalised_[j++].logit;
        if (cand_.size() < k) {
            cand_.push_back(c);
            std::push_heap(cand_.begin(), cand_.end(), better);
        } else if (better(c, cand_.front())) {
            std::pop_heap(cand_.begin(), cand_.end(), better);
            cand_.back() = c;
            std::push_heap(cand_.begin(), cand_.end(), better);
        }
    }
    std::sort_heap(cand_.begin(), cand_.end(), better);  // best first
    sorted_ = true;
}

// Keeps the smallest prefix (by logit) whose probability reaches top_p, probabilities taken
// at temperature 1 over the current candidates, as llama.cpp does (temperature comes last).
void Sampler::apply_top_p() {
    const float max = max_logit(cand_);
    if (max == kNegInf) return;  // every candidate equally (im)possible: nothing to rank
    double z = 0.0;
    for (const Candidate& c : cand_) z += std::exp(c.logit - max);
    if (!sorted_ && params_.min_p > 0.0f) {
        // min-p will drop every token below max + log(min_p) whatever top-p keeps, and both
        // keep a prefix of the same order, so dropping those now (z already holds them)
        // changes nothing but the amount left to sort.
        const float threshold = max + std::log(params_.min_p);
        std::erase_if(cand_, [&](const Candidate& c) { return c.logit < threshold; });
    }
    // Without top-k the candidates are the whole vocabulary. Sort a prefix and widen it
    // (x8) until it covers top_p: a few nth_element passes instead of a 250k-entry sort.
    size_t m = sorted_ ? cand_.size() : std::min<size_t>(cand_.size(), 64);
    for (;;) {
        if (!sorted_) sort_prefix(cand_.begin(), cand_.begin() + static_cast<ptrdiff_t>(m), cand_.end());
        double cum = 0.0;
        for (size_t i = 0; i < m; ++i) {
            cum += std::exp(cand_[i].logit - max) / z;
            if (cum >= params_.top_p) {
                cand_.resize(i + 1);
                sorted_ = true;
                return;
            }
        }
        // The whole list never reached top_p: min-p's cut above removed the rest (which
        // min-p would do anyway), or rounding left the sum a hair short. Keep all.
        if (m == cand_.size()) {
            sorted_ = true;
            return;
        }
        m = std::min(cand_.size(), m * 8);
    }
}

// Keeps tokens with p >= min_p * p_max, i.e. logit >= max + log(min_p). The likeliest token
// always survives since min_p <= 1.
void Sampler::apply_min_p() {
    const float max = sorted_ ? cand_.front().logit : max_logit(cand_);
    const float threshold = max + std::log(params_.min_p);
    if (sorted_) {
        size_t keep = 1;
        while (keep < cand_.size() && cand_[keep].logit >= threshold) ++keep;
        cand_.resize(keep);
    } else {
        std::erase_if(cand_, [&](const Candidate& c) { return c.logit < threshold; });  // stable
    }
}

// Temperature, then the softmax over the survivors, reported in id order so the draw does
// not depend on how the filters arranged them.
void Sampler::finish(TokenDistribution* out) {
    if (sorted_)
        std::sort(cand_.begin(), cand_.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
    const size_t n = cand_.size();
    out->ids.resize(n);
    out->probs.resize(n);
    const float max = max_logit(cand_);
    if (max == kNegInf) {
        for (size_t i = 0; i < n; ++i) {
            out->ids[i] = cand_[i].id;
            out->probs[i] = 1.0f / static_cast<float>(n);
        }
        return;
    }
    const float inv_t = 1.0f / params_.temperature;
    double sum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        const float e = std::exp((cand_[i].logit - max) * inv_t);
        out->ids[i] = cand_[i].id;
        out->probs[i] = e;
        sum += e;
    }
    const float scale = static_cast<float>(1.0 / sum);
    for (float& p : out->probs) p *= scale;
}

void Sampler::distribution(const float* logits, int n_vocab, std::span<const int32_t> history,
                           TokenDistribution* out) {
    TDM_ASSERT(logits != nullptr && n_vocab > 0 && out != nullptr);
    collect_penalties(logits, n_vocab, history);
    if (greedy()) {
        out->ids.assign(1, penalised_argmax(logits, n_vocab));
        out->probs.assign(1, 1.0f);
        return;
    }
    if (params_.top_k > 0 && params_.top_k < n_vocab) {
        select_top_k(logits, n_vocab);
    } else {  // top-k off, or keeping everything anyway
        cand_.resize(static_cast<size_t>(n_vocab));
        for (int32_t i = 0; i < n_vocab; ++i) cand_[static_cast<size_t>(i)] = {i, sanitize(logits[i])};
        for (const Candidate& p : penalised_) cand_[static_cast<size_t>(p.id)].logit = p.logit;
        sorted_ = false;
    }
    if (params_.top_p < 1.0f) apply_top_p();
    if (params_.min_p > 0.0f) apply_min_p();
    finish(out);
}

int32_t Sampler::sample(const float* logits, int n_vocab, std::span<const int32_t> history) {
    TDM_ASSERT(logits != nullptr && n_vocab > 0);
    if (greedy()) {
        collect_penalties(logits, n_vocab, history);
        return penalised_argmax(logits, n_vocab);
    }
    distribution(logits, n_vocab, history, &scratch_);
    return draw(scratch_, rng_);
}

// ---------------------------------------------------------------------------------------
// Speculative acceptance
// ---------------------------------------------------------------------------------------

double residual(const TokenDistribution& p, const TokenDistribution& q, TokenDistribution* out) {
    // Over p's support (where p = 0 the residual is 0 too). Both id lists are ascending, so
    // one merge walk finds q for each of p's tokens.
    out->ids.clear();
    out->probs.clear();
    out->ids.reserve(p.size());
    out->probs.reserve(p.size());
    double sum = 0.0;
    size_t j = 0;
    for (size_t i = 0; i < p.size(); ++i) {
        const int32_t id = p.ids[i];
        while (j < q.size() && q.ids[j] < id) ++j;
        const float qi = (j < q.size() && q.ids[j] == id) ? q.probs[j] : 0.0f;
        const float r = std::max(0.0f, p.probs[i] - qi);
        if (r > 0.0f) {
            out->ids.push_back(id);
            out->probs.push_back(r);
            sum += r;
        }
    }
    return sum;
}

SpecDecision speculative_accept(const TokenDistribution& p_target, const TokenDistribution& q_draft,
                                int32_t draft_token, Rng& rng) {
    TDM_ASSERT(!p_target.ids.empty());
    const double q = q_draft.prob(draft_token);
    TDM_ASSERT_MSG(q > 0.0, "the draft token must have been drawn from q_draft");
    const double p = p_target.prob(draft_token);
    // u < p/q, written without the division; p >= q always accepts.
    if (rng.uniform() * q < p) return {true, draft_token};

    // An empty residual means p <= q everywhere, i.e. p == q up to rounding, where a
    // rejection has (nearly) zero probability; p itself is then the right fallback.
    TokenDistribution rest;
    if (!(residual(p_target, q_draft, &rest) > 0.0)) return {false, draw(p_target, rng)};
    return {false, draw(rest, rng)};
}

SpecDecision speculative_accept(const TokenDistribution& p_target, int32_t draft_token, Rng& rng) {
    const TokenDistribution point_mass{{draft_token}, {1.0f}};
    return speculative_accept(p_target, point_mass, draft_token, rng);
}

}  // namespace tdm
