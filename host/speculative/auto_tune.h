/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/auto_tune.h: choosing the draft length from measurements, so that
// speculation never makes decoding slower.
//
// With per-token acceptance a and k drafts, a round yields
// E(k) = (1 - a^(k+1)) / (1 - a) tokens for the cost of drafting k tokens and
// verifying k+1 (DESIGN §4). The tuner keeps running estimates of a, of the
// plain step time, of the verify time per width and of the draft time per
// token, and picks the k with the best E(k) * T_plain / (T_draft(k) +
// T_verify(k)). When no k beats 1.02 (smaller gains are timing noise),
// drafting is switched off and re-probed
// with k = 1 every `probe_interval` plain steps, so a drafter that starts to
// agree is noticed while one that never does costs a few percent at most.
// The first round of each k and the first plain step only count for
// acceptance: their time usually includes building that shape's graphs.
#pragma once

#include <cstdint>
#include <vector>

namespace tdm {

class AutoTune {
public:
    explicit AutoTune(int k_max, int probe_interval = 24);

    // The draft length to try this round (0 = plain step); k_cap bounds it.
    int choose(int k_cap);
    void observe_plain(double ms);
    void observe_round(int k, int accepted, double draft_ms, double verify_ms);

    double acceptance() const;
    double predicted_speedup(int k) const;

private:
    double verify_estimate(int k) const;
    int k_max_, probe_interval_;
    double plain_ms_ = 0;                 // EMA of a single-token target pass
    std::vector<double> verify_ms_;       // EMA per width k (index k), 0 = unmeasured
    std::vector<int> rounds_at_;          // rounds seen per k: the first is a warm-up (graph builds)
    int plain_seen_ = 0;
    double draft_ms_per_token_ = 0;       // EMA
    double acc_ = 0, gen_ = 0;            // decayed counts of accepted / drafted tokens
    double prior_ = 1.0;                  // decayed weight of the Beta(1, 1) prior
    int plain_since_probe_ = 0;
    bool off_ = false;
};

}  // namespace tdm
