// SPDX-License-Identifier: Apache-2.0
// host/speculative/goodput.cpp
#include "speculative/goodput.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace tdm {
namespace {

constexpr double kEma = 0.2;      // weight of a new timing sample
constexpr double kDecay = 0.9;    // per round or plain step, of the acceptance counts and the prior: ~10
// Weight of the pooled rate in each position's estimate, in drafts. A deep position is tried
// only in rounds long enough to reach it, which are chosen when its estimate is high: one that
// fell low by chance would stay low for want of trials (and the length short) if the pooled
// rate, which every round measures, did not pull it back.
constexpr double kShrink = 2.0;
constexpr double kPriorWeight = 2.0;  // the kind's prior, in drafts, before it decays
// The engine's history as a prior: it has seen this server's text, so it weighs more than the
// kind's guess (4 drafts), and up to 16 where its sequences agree with each other
// (GoodputMemory::prior_weight), but still decays away within the first ten or twenty rounds.
constexpr double kHistoryPriorWeight = 4.0;
constexpr double kMaxHistoryPriorWeight = 16.0;
// The decay stops at this many drafts of the sequence's own evidence (their rates per
// position kept). Without a floor, 8-16 plain steps off left a draft or two of evidence, and
// one accepted probe lifted an acceptance of 0.45 to about 0.75: on lavapipe, where k = 1
// breaks even near 0.65, that bought several losing rounds per probe (in a simulation of
// 3600 steps at 0.5, 300 rounds; a hit after 64 plain steps chose k = 16). With 4 (the
// history prior's least weight; a prior of more has decayed below it within a probe
// interval or two off), one hit moves the estimate a fifth of the way to 1 (0.45 to 0.56):
// it takes a run of hits, which probes at the first interval (count_acceptance) find within
// a few intervals when the text does turn predictable.
constexpr double kMinEvidence = 4.0;
// A draft head's first length without history: one draft. Where the head does not agree with
// its target (acceptance 0) the trial costs a draft and a verify row, half a plain step on a
// CPU device against about 2 steps at k = 3 (a 4-row verify costs two plain steps on lavapipe),
// 8% of a 24-token reply; where it agrees, the controller lengthens from the data.
constexpr int kHeadStartK = 1;
// What a history must hold, in drafts (decayed by sequence: two sequences' trials hold 1.7),
// before a new sequence takes its acceptance for a verdict, unless one was accepted. The first
// sequence's trial alone decided for every later one: at a forced acceptance of 0.7 it missed
// 30% of the time, and then every prompt of `bench spec` (every short request of a server)
// started off, never having agreed, and waited past its end for a probe (fixed draws at
// 4 prompts of 32 tokens: 1 round in 124 steps, 0.995x, against 1.09x at fixed k = 1). A
// second sequence's trial makes that 9%, for one more trial per engine where a head never
// agrees and requests come one after another (about half a plain step on lavapipe; requests
// that start together before two trials have ended each make theirs).
constexpr double kVerdictDrafts = 1.5;
constexpr int kMaxBackOff = 32;   // a probe interval grows to at most 32x the first
// Drafting is switched off only when no length pays even with each position's acceptance
// raised by the benefit of the doubt: at a moderate acceptance (0.5-0.7) a few rejections in
// a row would otherwise switch it off for a probe interval or longer. The doubt is one
// standard error (kOptimism) where an accepted draft can pay for its round
// (GoodputController::optimism). Not after a streak of rounds whose first draft was rejected,
// so that a drafter that stopped agreeing is still stopped within a few rounds. And only for
// a drafter that has shown it agrees (a draft accepted in this sequence or in its
// history): a first trial that missed is no evidence of a moderate acceptance, and at
// acceptance 0 two more trials cost a plain step on a CPU device.
constexpr double kOptimism = 1.0;
constexpr int kMissesBeforeDoubt = 3;
// The share of the time probes may be expected to lose while drafting is off: the wait is at
// least a probe's expected loss (its draft and the verify row over a plain step, less the
// token an accepted one wins where the drafter agreed before) over this share, so that where a
// probe costs half a plain step (lavapipe, a head that never agreed) it comes after 25 plain
// steps, not 8, and where it costs nearly nothing (a GPU) the probe interval rules.
constexpr double kProbeShare = 0.02;
// Until a probe has been timed warm, its cost is the first trial's, which includes building the
// head's and the verify's graphs: on a GPU that can be several plain steps, so the wait it
// implies is capped at this many probe intervals (a good head whose first trial missed gets
// its second chance within 32 steps, not 256); starved with others in a batch, as many times
// as there are of them (probe_wait).
constexpr int kTrialWaitIntervals = 4;
// Only a plain step measures a plain step, and a controller that drafts every round takes
// none: a baseline that came out too high makes every length look better than it is, is
// never corrected, and keeps a moderate acceptance drafting at a loss (on lavapipe a
// baseline of about 2.3 plain steps from `bench spec`'s warm-up, handed on by the history,
// kept A = 0.5 drafting every round of 4 prompts). So after this many rounds without a
// plain step one is taken; one that finds the estimate right doubles the wait, up to 16x.
constexpr int kRemeasureRounds = 16;
constexpr int kMaxRemeasureBackOff = 16;
// A re-measured plain step within this share of the estimate finds it right.
constexpr double kRemeasureTolerance = 0.1;

double ema(double old, double x) { return old == 0 ? x : old + kEma * (x - old); }

// A round went by without a plain step. A re-measure that was due got the round instead
// (another drafter of a chain drafted, or a batch's plan gave drafts): it waits another
// period rather than keep its drafter out of the rounds until every other one is due too.
void count_round_without_plain(int& rounds_since_plain, int remeasure_after, bool& remeasuring) {
    if (remeasuring || rounds_since_plain >= remeasure_after) {
        remeasuring = false;
        rounds_since_plain = 0;
    }
    ++rounds_since_plain;
}

// An unmeasured drafter's acceptance: half for a head (what a head trained with its target
// agrees on in running text is 0.5 to 0.8; a random or foreign one 0), a little more for an
// n-gram match, which drafts only where the history repeats.
double prior_acceptance(DrafterKind kind) { return kind == DrafterKind::ngram ? 0.6 : 0.5; }

}  // namespace

double min_gain(uint32_t sequences_in_pass) { return sequences_in_pass > 1 ? 1.05 : 1.02; }

GoodputController::GoodputController(int k_max, int probe_interval, DrafterKind kind, const GoodputMemory* history)
    : k_max_(std::max(1, k_max)),
      probe_interval_(std::max(1, probe_interval)),
      probe_after_(probe_interval_),
      kind_(kind),
      verify_ms_(size_t(k_max_) + 1, 0.0),
      rounds_at_(size_t(k_max_) + 1, 0),
      tried_(size_t(k_max_), 0.0),
      hit_(size_t(k_max_), 0.0),
      seen_tried_(size_t(k_max_), 0.0),
      seen_hit_(size_t(k_max_), 0.0),
      prior_(kPriorWeight),
      prior_rate_(prior_acceptance(kind)),
      remeasure_after_(kRemeasureRounds) {
    report_.on = true;
    if (history) start_from(*history);
}

void GoodputController::start_from(const GoodputMemory& h) {
    const double tried = h.tried_total();
    agreed_ = h.hit_total() > 0;
    // One rejected draft is no verdict on a drafter (kVerdictDrafts): without another, this
    // sequence makes its own trial, as if the history held costs alone.
    const bool verdict = agreed_ || tried >= kVerdictDrafts;
    if (verdict) {  // a few drafts of the kind's prior keep a short history from being all of it
        prior_rate_ = (h.hit_total() + kShrink * prior_acceptance(kind_)) / (tried + kShrink);
        prior_ = h.prior_weight(kHistoryPriorWeight, kMaxHistoryPriorWeight);
        prior_at_.assign(size_t(k_max_), prior_rate_);
        for (size_t j = 0; j < prior_at_.size() && j < h.tried.size() && j < h.hit.size(); ++j)
            prior_at_[j] = (h.hit[j] + kShrink * prior_rate_) / (h.tried[j] + kShrink);
    }
    // a width an earlier sequence ran has its graphs built: this sequence's first round there
    // (a head's trial, a probe) is timed, and hands its cost on
    for (size_t k = 1; k < rounds_at_.size() && k < h.built.size(); ++k)
        if (h.built[k]) rounds_at_[k] = std::max(rounds_at_[k], 1);
    if (h.trial_ms > 0 && trial_ms_ == 0) trial_ms_ = h.trial_ms;  // the probe's cost until one is timed warm
    // the drafter's probing goes on where the sequences before left it, if this one starts off
    plain_since_probe_ = int(std::min(h.off_steps, double(probe_interval_ * kMaxBackOff)));
    if (h.probe_after > 0) probe_after_ = std::clamp(h.probe_after, probe_interval_, probe_interval_ * kMaxBackOff);
    if (h.plain_ms <= 0) return;
    // the device's costs are known: no calibration, and the graphs of the widths measured
    // are built; with the drafter's acceptance too, no first round at the kind's length (a
    // history of costs alone, a benchmark's warm-up with forced drafts, still has it)
    plain_ms_ = h.plain_ms;
    plain_seen_ = 2;
    started_ = verdict;
    draft_ms_per_token_ = h.draft_ms_per_token;
    resume_ms_ = h.resume_draft_ms;
    resume_measured_ = h.resume_measured;
    for (size_t k = 1; k < verify_ms_.size() && k < h.verify_ms.size(); ++k)
        if (h.verify_ms[k] > 0) {
            verify_ms_[k] = h.verify_ms[k];
            rounds_at_[k] = 1;
        }
    report_.plain_ms = plain_ms_;
}

GoodputMemory GoodputController::learned() const {
    GoodputMemory m;
    m.tried = seen_tried_;
    m.hit = seen_hit_;
    m.plain_ms = plain_ms_;
    m.verify_ms = verify_ms_;
    m.draft_ms_per_token = draft_ms_per_token_;
    m.resume_draft_ms = resume_ms_;
    m.trial_ms = trial_ms_;
    // the count includes what this sequence started from, so the history takes it, not adds it;
    // a sequence that ends drafting hands on neither (its back-off is stale once it pays)
    m.off_steps = off_ ? plain_since_probe_ : 0;
    m.probe_after = off_ ? probe_after_ : 0;
    m.resume_measured = resume_measured_;
    m.built.assign(rounds_at_.size(), false);
    for (size_t k = 1; k < rounds_at_.size(); ++k) m.built[k] = rounds_at_[k] > 0;
    return m;
}

double GoodputController::acceptance() const {
    // The prior decays with the data, so a drafter that never agrees tends to 0 instead of
    // to the prior's share of a decayed window.
    double hit = 0, tried = 0;
    for (size_t j = 0; j < tried_.size(); ++j) {
        hit += hit_[j];
        tried += tried_[j];
    }
    // the prior decays without bound: a chain member never asked for thousands of steps
    // would otherwise divide 0 by 0
    return tried + prior_ > 0 ? (hit + prior_ * prior_rate_) / (tried + prior_) : prior_rate_;
}

double GoodputController::acceptance_at(int j) const {
    const double pooled = acceptance();
    if (j < 1 || j > k_max_) return pooled;
    const size_t i = size_t(j - 1);
    if (prior_at_.empty()) return (hit_[i] + kShrink * pooled) / (tried_[i] + kShrink);
    // the history knows how acceptance falls with depth, which the pooled rate does not
    return (hit_[i] + kShrink * pooled + prior_ * prior_at_[i]) / (tried_[i] + kShrink + prior_);
}

double GoodputController::reach(int j) const {
    double r = 1.0;
    for (int i = 1; i <= j; ++i) r *= std::min(acceptance_at(i), 0.999);
    return r;
}

double GoodputController::expected_tokens(int k) const { return expected_tokens(k, 0.0); }

double GoodputController::expected_tokens(int k, double optimism) const {
    double e = 1.0, r = 1.0;
    for (int j = 1; j <= k; ++j) {
        r *= std::min(optimism > 0 ? acceptance_bound(j, optimism) : acceptance_at(j), 0.999);
        e += r;
    }
    return e;
}

double GoodputController::acceptance_bound(int j, double optimism) const {
    const double p = acceptance_at(j);
    if (j < 1 || j > k_max_) return p;
    const size_t i = size_t(j - 1);
    const double n = tried_[i] + kShrink + (prior_at_.empty() ? 0.0 : prior_);
    return std::min(1.0, p + optimism * std::sqrt(p * (1.0 - p) / n));
}

double GoodputController::verify_estimate(int k) const {
    if (verify_ms_[size_t(k)] > 0) return verify_ms_[size_t(k)];
    // Interpolate from the nearest measured widths; before any, assume verifying
    // k+1 tokens costs (1 + k/4) plain steps (a guess corrected by the first rounds).
    int lo = -1, hi = -1;
    for (int j = k - 1; j >= 1; --j)
        if (verify_ms_[size_t(j)] > 0) { lo = j; break; }
    for (int j = k + 1; j <= k_max_; ++j)
        if (verify_ms_[size_t(j)] > 0) { hi = j; break; }
    const double plain = plain_ms_ > 0 ? plain_ms_ : 1.0;
    if (lo > 0 && hi > 0)
        return verify_ms_[size_t(lo)] + (verify_ms_[size_t(hi)] - verify_ms_[size_t(lo)]) * (k - lo) / double(hi - lo);
    if (lo > 0) return verify_ms_[size_t(lo)] * double(k + 1) / double(lo + 1) * 0.5 + verify_ms_[size_t(lo)] * 0.5;
    if (hi > 0) return verify_ms_[size_t(hi)] * double(k + 1) / double(hi + 1);
    return plain * (1.0 + 0.25 * k);
}

double GoodputController::predicted_speedup(int k) const { return speedup(k, 0.0); }

double GoodputController::speedup(int k, double optimism) const {
    if (k <= 0) return 1.0;
    k = std::min(k, k_max_);
    const double plain = plain_ms_ > 0 ? plain_ms_ : 1.0;
    const double cost = verify_estimate(k) + draft_ms_per_token_ * k;
    return cost > 0 ? expected_tokens(k, optimism) * plain / cost : 1.0;
}

double GoodputController::miss_cost() const {
    if (plain_ms_ <= 0) return 0.0;
    return (verify_estimate(1) + draft_ms_per_token_ - plain_ms_) / plain_ms_;
}

double GoodputController::catch_up_ms() const {
    if (!catches_up() || resume_ms_ <= 0) return 0.0;
    return std::max(0.0, resume_ms_ - draft_ms_per_token_);
}

double GoodputController::optimism() const {
    // A round of one draft costs 1 + m plain steps (m = miss_cost()): accepted, it gains
    // 1 - m against plain decoding. Where that is nothing (m >= 1) no acceptance makes a
    // round pay, and there is nothing to find out.
    return miss_cost() < 1.0 ? kOptimism : 0.0;
}

bool GoodputController::any_k_pays() const {
    // an n-gram drafter needs no proof of agreement: it drafts only where its table matches
    const bool shown = agreed_ || kind_ == DrafterKind::ngram;
    const double doubt = shown && first_misses_ < kMissesBeforeDoubt ? optimism() : 0.0;
    for (int j = 1; j <= k_max_; ++j)
        if (speedup(j, doubt) > min_gain(1)) return true;
    return false;
}

GoodputOffer GoodputController::offer(int k_cap) const {
    using Why = GoodputOffer::Why;
    k_cap = std::min(k_cap, k_max_);
    if (k_cap <= 0) return {};  // nothing may be drafted: not the controller's choice
    if (!started_) return {kind_ == DrafterKind::ngram ? k_cap : std::min(kHeadStartK, k_cap), 1.0, Why::first};
    if (plain_ms_ == 0) return {0, 1.0, Why::calibrating};  // plain steps measure the baseline
    if (rounds_since_plain_ >= remeasure_after_) return {0, 1.0, Why::calibrating};  // and re-measure it
    if (off_)
        return plain_since_probe_ >= wait_for_probe() ? GoodputOffer{1, predicted_speedup(1), Why::probe}
                                                  : GoodputOffer{0, 1.0, Why::off};
    int k = 0;
    double best_s = min_gain(1);
    for (int j = 1; j <= k_cap; ++j) {
        const double s = predicted_speedup(j);
        if (s > best_s) {
            best_s = s;
            k = j;
        }
    }
    if (k == 0 && any_k_pays()) k = 1;
    return {k, k > 0 ? predicted_speedup(k) : 1.0, Why::measured};
}

int GoodputController::choose(int k_cap) {
    using Why = GoodputOffer::Why;
    const GoodputOffer o = offer(k_cap);
    switch (o.why) {
    case Why::nothing: return 0;
    case Why::first:  // the trial finds out what a probe would
        started_ = true;
        restart_probe_count();
        break;
    case Why::probe:
        restart_probe_count();
        probing_ = true;
        ++report_.probes;
        break;
    case Why::measured:
        if (o.k == 0) off_ = true;
        break;
    case Why::calibrating: remeasuring_ = rounds_since_plain_ >= remeasure_after_; break;
    case Why::off: break;
    }
    planned(o.k);
    return o.k;
}

void GoodputController::planned(int k) {
    if (k <= 0) {
        ++report_.off_steps;
        return;
    }
    ++report_.chosen_rounds;
    report_.chosen_k_sum += uint64_t(k);
    report_.predicted_sum += predicted_speedup(k);
}

bool GoodputController::probe_when_starved(uint32_t probers, uint32_t sequences) {
    // The same wait as alone, probe_wait(): the back-off, and the expected loss's floor
    // (n-gram drafters are exempt there). In a batch this controller's timings are
    // the batch's passes, so the floor weighs what a probe adds to everyone's pass: without
    // it, a head that never agreed probed every 8th pass at 4 streams of Qwen3.5-0.8B on
    // lavapipe, the probe rows and the head's step costing every stream 5-8% (docs/BENCHMARKS.md).
    // And every sequence of the pass waits for that time, while each starved one prices its
    // own probes: p of them keeping theirs to 2% of the time each spent p times 2% of it. The
    // loss is therefore weighed by the probers (probe_wait). Without that, a tiny Qwen3.5 at
    // 16 streams on lavapipe (a pass 13 ms, the head's catch-up graph 5-6 ms) had nearly
    // every request probe once and ran at 0.88 of plain decoding.
    // Priced once, at the first starved pass after a probe or a round, and again only when the
    // number of probers changes (latch_wait): the plan never switches this controller off, and
    // priced at every pass the wait followed the batch's slow stretches down.
    latch_wait(std::max<uint32_t>(probers, 1), sequences);
    if (++starved_ < wait_for_probe()) return false;
    restart_probe_count();
    probing_ = true;
    ++report_.probes;
    return true;
}

void GoodputController::probe_dropped() {
    // the plan found the probe could not pay even accepted: the wait starts again, no back-off
    probing_ = false;
    --report_.probes;
}

void GoodputController::observe_plain(double ms, bool alone) {
    // due: this controller chose the step to re-measure, or (a chain, whose members share the
    // plain step) it was due and another member chose it. A batch's pass is no plain step of
    // this sequence's: its time moves with the other rows, so keeping its minimum would drag
    // the baseline down and the tolerance would hold the wait at its shortest.
    const bool due = alone && (remeasuring_ || rounds_since_plain_ >= remeasure_after_);
    previous_ = Previous::plain;
    rounds_since_plain_ = 0;
    if (!alone) remeasuring_ = false;
    if (due) {
        remeasuring_ = false;
        const bool right = std::abs(ms - plain_ms_) <= kRemeasureTolerance * plain_ms_;
        remeasure_after_ = right ? std::min(remeasure_after_ * 2, kRemeasureRounds * kMaxRemeasureBackOff)
                                 : kRemeasureRounds;
        // One far under the estimate is the step as it is (the estimate was handed on too
        // high, or taken in a slow stretch). One within the tolerance is averaged like any
        // other: kept as the estimate, one fast sample set the baseline against the verify's
        // average (on lavapipe, a prompt's last step at 181 ms against 197 moved the miss cost
        // from 0.66 to 0.81 and switched the next prompt's drafting off after one rejection).
        if (ms < plain_ms_ * (1.0 - kRemeasureTolerance)) plain_ms_ = ms;
    }
    if (plain_seen_++ > 0) plain_ms_ = ema(plain_ms_, ms);
    report_.plain_ms = plain_ms_;
    if (!started_ && !off_) return;
    // The sequence moves on without drafts: old evidence weighs less, so that a probe after
    // a long pause speaks for the text as it is now.
    decay();
    if (off_) {
        ++plain_since_probe_;
        latch_wait(alone ? 1 : 0, 1);  // a batch's pass: the plan's latch (probe_when_starved) stays
    }
}

void GoodputController::observe_elsewhere(int k, double verify_ms) {
    count_round_without_plain(rounds_since_plain_, remeasure_after_, remeasuring_);
    // this drafter's head catches up on that round's rows as on those of one of its own
    previous_ = Previous::round;
    if (k >= 1 && k <= k_max_ && rounds_at_[size_t(k)]++ > 0)
        verify_ms_[size_t(k)] = ema(verify_ms_[size_t(k)], verify_ms);
    if (!started_ && !off_) return;
    decay();
    if (off_) {
        ++plain_since_probe_;
        latch_wait(0, 1);
    }
}

// The wait before the next probe is priced once, at the first step off after a probe or a
// round, not again at every step (only when the probers it was priced for change): priced at
// every step it was the least of many noisy prices.
// A slow stretch raises the plain step's estimate within a step or two while the verify's
// stays where the last round left it, so the miss looks cheap for as long as it lasts: on
// lavapipe two plain steps of 551 and 669 ms (against 410) moved the Gemma 4 assistant's miss
// cost from 0.43 to 0.22, and its probe came 12 steps after a trial instead of 21, itself in
// the slow stretch (a verify of 792 ms).
void GoodputController::latch_wait(uint32_t probers, uint32_t sequences) {
    if (plain_ms_ <= 0) return;
    if (probers == 0) probers = latched_wait_ >= 0 ? latched_for_ : 1;
    if (latched_wait_ >= 0 && probers == latched_for_) return;
    // Priced again when the probers change: a sequence switched off alone (or before the
    // batch's plan had its pass costs) and then starved among 16 kept the price of one, and at
    // 16 streams of the tiny Qwen3.5 every request probed 7-15 passes in; one alone again
    // would keep the price of 16. With more probers the wait never shortens: the passes that
    // brought them (their prompts) also raised the plain step's estimate, which makes a probe
    // look cheap.
    const int wait = probe_wait(probers, sequences);
    latched_wait_ = latched_wait_ >= 0 && probers > latched_for_ ? std::max(latched_wait_, wait) : wait;
    latched_for_ = probers;
}

void GoodputController::restart_probe_count() {
    plain_since_probe_ = 0;
    starved_ = 0;
    latched_wait_ = -1;
    latched_for_ = 0;
}

int GoodputController::wait_for_probe() const { return latched_wait_ > 0 ? latched_wait_ : probe_wait(); }

void GoodputController::decay() {
    // the prior decays away (a drafter that never agrees tends to 0); the sequence's own
    // evidence down to its floor, each position's rate kept
    prior_ *= kDecay;
    double total = 0;
    for (double t : tried_) total += t;
    if (total <= kMinEvidence) return;
    const double keep = std::max(kDecay, kMinEvidence / total);
    for (size_t j = 0; j < tried_.size(); ++j) {
        tried_[j] *= keep;
        hit_[j] *= keep;
    }
}

int GoodputController::probe_wait(uint32_t probers, uint32_t sequences) const {
    // An n-gram drafter's probe drafts only where its table matches, at no drafting cost, and
    // its matches come and go with the text: the back-off's pace is its own.
    if (plain_ms_ <= 0 || kind_ == DrafterKind::ngram) return probe_after_;
    // a probe's cost: measured (a verify of 2 rows, else interpolated from the widths timed
    // warm), or the first trial's (graph builds included: an upper bound, so the wait it gives
    // is capped), or the guess
    const double probe_draft_ms = resume_ms_ > 0 ? resume_ms_ : draft_ms_per_token_;
    const bool measured = probe_draft_ms > 0 &&
                          std::any_of(verify_ms_.begin() + 1, verify_ms_.end(), [](double ms) { return ms > 0; });
    const double probe_ms = !measured && trial_ms_ > 0 ? trial_ms_ : verify_estimate(1) + probe_draft_ms;
    const double extra = (probe_ms - plain_ms_) / plain_ms_;
    // A drafter that agreed (in this sequence or its history) may find its text back at the
    // next probe, and an accepted probe wins a token: what a probe is expected to lose is its
    // extra cost less its acceptance, and the probes keep that to kProbeShare of the time.
    // Where a miss costs little (a GPU) the back-off rules; on lavapipe, where a probe costs
    // about a plain step more (the head catches up on the rows it skipped), an acceptance of
    // 0.3 spaces them by some 35 plain steps: at the back-off's 8-16, two probes per 32-token
    // prompt cost 4% (docs/BENCHMARKS.md, issue 40). One that never agreed wins nothing.
    // In a batch (probe_when_starved) `probers` starved sequences each probe on this wait, and
    // the pass of `sequences` waits for each probe's extra time, while an accepted probe wins
    // one of that pass's tokens.
    const double p = double(std::max<uint32_t>(probers, 1));
    const double n = double(std::max({sequences, probers, 1u}));
    const double paid = extra * p;
    const double loss = agreed_ ? paid - p / n * acceptance_at(1) : paid;
    const double by_cost = std::ceil(std::max(0.0, loss) / kProbeShare);
    // The cap on a wait priced by the trial alone gives a good head whose first trial missed
    // a second chance soon. Starved together, p sequences' trials all missed, which is p
    // times the evidence, and each probe's cost is paid p times: the cap grows with them. At
    // one it held the tiny Qwen3.5's first wave of 16 streams (lavapipe) to 32 passes, where a
    // third of them probed together, the head catching up on 56 rows each: 3.5 passes lost.
    const int trial_cap = std::min(kMaxBackOff, kTrialWaitIntervals * int(p));
    const int cap = probe_interval_ * (measured || trial_ms_ <= 0 ? kMaxBackOff : trial_cap);
    return std::max(probe_after_, int(std::min(by_cost, double(cap))));
}

void GoodputController::probe_failed() {
    probe_after_ = std::min(probe_after_ * 2, probe_interval_ * kMaxBackOff);
}

void GoodputController::observe_round(int k, int accepted, double draft_ms, double verify_ms) {
    if (k <= 0 || k > k_max_) return;
    started_ = true;
    count_round_without_plain(rounds_since_plain_, remeasure_after_, remeasuring_);
    const Previous previous = std::exchange(previous_, Previous::round);
    if (k == 1 && rounds_at_[1] == 0) trial_ms_ = draft_ms + verify_ms;
    if (rounds_at_[size_t(k)]++ > 0) {
        verify_ms_[size_t(k)] = ema(verify_ms_[size_t(k)], verify_ms);
        // a catch-up is a round's cost, not a draft's: only a round of one draft (a probe's
        // length) says what a probe drafts
        if (previous == Previous::round) {
            draft_ms_per_token_ = ema(draft_ms_per_token_, draft_ms / k);
        } else if (k == 1 && previous == Previous::plain) {
            resume_ms_ = resume_measured_ ? ema(resume_ms_, draft_ms) : draft_ms;
            resume_measured_ = true;
        } else if (k == 1 && !resume_measured_) {
            resume_ms_ = ema(resume_ms_, draft_ms);
        }
    }
    count_acceptance(k, accepted, true);
}

void GoodputController::observe_tree_round(int depth, int rows, int accepted, double verify_ms) {
    if (depth <= 0 || depth > k_max_) return;
    started_ = true;
    previous_ = Previous::round;
    count_round_without_plain(rounds_since_plain_, remeasure_after_, remeasuring_);
    const int width = std::clamp(rows - 1, 1, k_max_);
    if (rounds_at_[size_t(width)]++ > 0) verify_ms_[size_t(width)] = ema(verify_ms_[size_t(width)], verify_ms);
    count_acceptance(depth, accepted, false);
}

void GoodputController::count_acceptance(int k, int accepted, bool for_history) {
    accepted = std::clamp(accepted, 0, k);
    decay();
    // Drafts after the first rejection were never really tested: the accepted ones and
    // the rejected one were.
    for (int j = 0; j < std::min(k, accepted + 1); ++j) {
        tried_[size_t(j)] += 1;
        if (for_history) seen_tried_[size_t(j)] += 1;
    }
    for (int j = 0; j < accepted; ++j) {
        hit_[size_t(j)] += 1;
        if (for_history) seen_hit_[size_t(j)] += 1;
    }
    if (accepted > 0) agreed_ = true;
    restart_probe_count();  // a round finds out what a probe would
    first_misses_ = accepted == 0 ? first_misses_ + 1 : 0;
    const bool pays = any_k_pays();
    if (probing_) {
        probing_ = false;
        // An accepted probe that does not turn drafting back on still says the text may be
        // turning predictable, and under the evidence floor one hit moves the estimate by a
        // fifth of the way: the next probe comes at the first interval, so that a run of hits
        // (text that did change) turns drafting on within a few intervals. Only a rejected
        // probe backs off. At a moderate acceptance on lavapipe this probes about every 25
        // plain steps, under 1% of the time.
        if (pays || accepted > 0) probe_after_ = probe_interval_;
        else probe_failed();
    }
    // A probe (or any round) that would pay again turns drafting back on.
    if (off_ && pays) off_ = false;
}

void GoodputController::observe_cut(int position) {
    if (position < 0 || size_t(position) >= tried_.size()) return;
    started_ = true;
    tried_[size_t(position)] += 1;
    seen_tried_[size_t(position)] += 1;
    if (position == 0) ++first_misses_;
    if (probing_ && position == 0) {  // the probe never reached the target: it failed
        probing_ = false;
        if (any_k_pays()) probe_after_ = probe_interval_;
        else probe_failed();
        latched_wait_ = -1;  // priced again with the back-off it now has
    }
}

}  // namespace tdm
