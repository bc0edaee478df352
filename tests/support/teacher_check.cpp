// SPDX-License-Identifier: Apache-2.0
// tests/support/teacher_check.cpp: the teacher-forced greedy check (teacher_check.h).
#include "support/teacher_check.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tdm::test {

void expect_greedy_follows_teacher(std::span<const int32_t> prompt, std::span<const int32_t> generated,
                                   std::span<const float> logits, uint32_t n_vocab, const std::string& label) {
    int near_ties = 0;
    for (size_t i = 0; i < generated.size(); ++i) {
        const float* row = logits.data() + (prompt.size() - 1 + i) * n_vocab;
        int best = 0;
        for (uint32_t v = 1; v < n_vocab; ++v)
            if (row[v] > row[best]) best = int(v);
        const int got_tok = generated[i];
        if (got_tok == best) continue;
        // a mismatch is acceptable only where the reference itself cannot tell
        EXPECT_LT(std::fabs(row[best] - row[got_tok]), 1e-3f * (1.0f + std::fabs(row[best])))
            << label << ": step " << i << " runtime chose " << got_tok << ", reference " << best;
        ++near_ties;
    }
    EXPECT_LE(near_ties, 1) << label;
}

}  // namespace tdm::test
