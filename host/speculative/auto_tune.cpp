// SPDX-License-Identifier: Apache-2.0
// host/speculative/auto_tune.cpp
#include "speculative/auto_tune.h"

#include <algorithm>
#include <cmath>

namespace tdm {
namespace {

constexpr double kEma = 0.2;     // weight of a new timing sample
constexpr double kDecay = 0.97;  // per-round decay of the acceptance counts (and of the prior): ~30 rounds
constexpr double kMinGain = 1.02;  // a predicted gain below 2% is within timing noise: do not draft for it

double ema(double old, double x) { return old == 0 ? x : old + kEma * (x - old); }

}  // namespace

AutoTune::AutoTune(int k_max, int probe_interval)
    : k_max_(std::max(1, k_max)),
      probe_interval_(std::max(1, probe_interval)),
      verify_ms_(size_t(k_max_) + 1, 0.0),
      rounds_at_(size_t(k_max_) + 1, 0) {}

double AutoTune::acceptance() const {
    // Beta prior worth prior_ tokens each way: an unmeasured drafter starts at
    // 0.5. The prior decays with the data, so a drafter that never agrees tends
    // to 0 instead of to the prior's share of a decayed window.
    return (acc_ + prior_) / (gen_ + 2.0 * prior_);
}

double AutoTune::verify_estimate(int k) const {
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

double AutoTune::predicted_speedup(int k) const {
    if (k <= 0) return 1.0;
    const double a = std::min(acceptance(), 0.999);
    const double expected = (1.0 - std::pow(a, k + 1)) / (1.0 - a);
    const double plain = plain_ms_ > 0 ? plain_ms_ : 1.0;
    const double cost = verify_estimate(k) + draft_ms_per_token_ * k;
    return cost > 0 ? expected * plain / cost : 1.0;
}

int AutoTune::choose(int k_cap) {
    k_cap = std::min(k_cap, k_max_);
    if (k_cap <= 0) return 0;
    if (plain_ms_ == 0) return 0;  // calibrate: plain steps measure the baseline
    if (off_) {
        if (plain_since_probe_ < probe_interval_) return 0;
        plain_since_probe_ = 0;
        return 1;  // probe
    }
    int best = 0;
    double best_s = kMinGain;
    for (int k = 1; k <= k_cap; ++k) {
        const double s = predicted_speedup(k);
        if (s > best_s) {
            best_s = s;
            best = k;
        }
    }
    if (best == 0) off_ = true;
    return best;
}

void AutoTune::observe_plain(double ms) {
    if (plain_seen_++ > 0) plain_ms_ = ema(plain_ms_, ms);
    if (off_) ++plain_since_probe_;
}

void AutoTune::observe_round(int k, int accepted, double draft_ms, double verify_ms) {
    if (k <= 0 || k > k_max_) return;
    if (rounds_at_[size_t(k)]++ > 0) {
        verify_ms_[size_t(k)] = ema(verify_ms_[size_t(k)], verify_ms);
        draft_ms_per_token_ = ema(draft_ms_per_token_, draft_ms / k);
    }
    acc_ = acc_ * kDecay + accepted;
    prior_ *= kDecay;
    // Tokens after the first rejection were never really tested: count the
    // accepted ones plus the rejected one.
    gen_ = gen_ * kDecay + std::min(k, accepted + 1);
    // A probe (or any round) that would pay again turns drafting back on.
    if (off_) {
        for (int j = 1; j <= k_max_; ++j)
            if (predicted_speedup(j) > kMinGain) {
                off_ = false;
                break;
            }
    }
}

}  // namespace tdm
