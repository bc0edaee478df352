/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/head_sampling_check.h: the T > 0 check of a draft head (DESIGN invariant 2),
// shared by the tests of the EAGLE-3 and DFlash heads as tests/models/gemma4/
// gemma4_spec_sampling_test.cpp does it for the Gemma 4 assistant: the joint distribution of
// the first two sampled tokens, plain vs speculative with the head drafting, over many seeds,
// compared by a two-sample chi-square (sampling_stats.h).
// Not here: the models and heads (each test loads its own), greedy exactness.
#pragma once

#include <cstdint>
#include <span>

#include "model/runner.h"
#include "kv/kv_pool.h"
#include "speculative/drafter.h"

namespace tdm::test {

struct HeadSamplingCounts {
    uint64_t drafted = 0, accepted = 0;
    double chi2 = 0.0;
    int cells = 0;
};

// `runs` plain runs of two tokens and `runs` speculative runs of three (with two the budget
// leaves no room for a draft after the first), each from `prompt` in a new sequence of `kv`,
// sampled at T = 1.5 over the top 4 with seeds of their own. A head's random weights put its
// drafts outside the target's top 4 nearly always, so the rejection rule would only ever
// reject a token of probability 0: the head does all its work (taps, its KV rolled back with
// each rejection) inside a forced drafter (speculative/forced_drafter.h) that proposes the
// target's greedy continuation instead, accepted often and rejected often. So this checks the
// rejection rule with the head's side effects in the loop, not the head's own drafts: a head
// whose logits were wrong would still pass here (its drafts are checked by the greedy
// exactness and reference tests).
HeadSamplingCounts sample_with_head(Runner& runner, KvPool& kv, std::span<const int32_t> prompt, Drafter& head,
                                    uint32_t n_vocab, int runs);

// The gtest verdict on `c`: drafts both taken and refused (each in at least 1 of 20 runs),
// and chi2 within 6 standard deviations of its mean (fixed seeds: deterministic; a
// deliberately loose bound).
void expect_same_distribution(const HeadSamplingCounts& c, int runs);

}  // namespace tdm::test
