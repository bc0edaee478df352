// SPDX-License-Identifier: Apache-2.0
// tests/support/goodput_sim.h: what the goodput controller's tests simulate: seeded
// acceptance draws, and a decode at a fixed cost table (plain steps of 10 ms).
#pragma once

#include <cstdint>

#include "speculative/goodput.h"

namespace tdm::goodput_sim {

// Deterministic draws: draft j is accepted with probability p (given the ones before it).
struct Draws {
    uint64_t state = 12345;
    double next() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return double(state >> 11) / double(1ull << 53);
    }
    int accepted(int k, double p) {
        int m = 0;
        while (m < k && next() < p) ++m;
        return m;
    }
};

// The costs of Qwen3.5-0.8B (Q8_0) with its MTP head on lavapipe in `bench spec`, in plain
// steps of 10: a verify of k + 1 rows 10 (1 + 0.41 k) (2 rows: 1.41 steps), a draft 2.8 per
// token. A round of one draft costs 1.69 steps: k = 1 breaks even near an acceptance of 0.69.
// A GPU: a verify row 5% of a step, a draft 0.5 (a miss costs 0.1).
struct SimCosts {
    double verify_per_draft, draft_ms;
};
constexpr SimCosts kLavapipeMtp{0.41, 2.8}, kGpuMtp{0.05, 0.5};

// A simulated decode of `steps` passes (plain steps or rounds) at acceptance `p(i)` (step i):
// the rounds drafted, the plain steps, the tokens and the time against plain decoding.
struct SimRun {
    int rounds = 0, plain = 0, late_plain = 0, late_off = 0;
    double tokens = 0, ms = 0;
    double speedup() const { return tokens * 10.0 / ms; }
};
template <class P>
SimRun simulate_costs(GoodputController& t, SimCosts c, int steps, uint64_t seed, P p, int late_from = 0) {
    Draws d{seed};
    SimRun r;
    for (int i = 0; i < steps; ++i) {
        const int k = t.choose(16);
        if (i >= late_from) r.late_off += t.off();
        if (k == 0) {
            t.observe_plain(10.0);
            ++r.plain;
            r.late_plain += i >= late_from;
            r.tokens += 1;
            r.ms += 10.0;
            continue;
        }
        const int a = d.accepted(k, p(i));
        const double verify = 10.0 * (1.0 + c.verify_per_draft * k);
        t.observe_round(k, a, c.draft_ms * k, verify);
        ++r.rounds;
        r.tokens += a + 1;
        r.ms += verify + c.draft_ms * k;
    }
    return r;
}

}  // namespace tdm::goodput_sim
