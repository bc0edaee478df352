/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/teacher_check.h: the check the models' end-to-end tests make of a greedy
// continuation against their CPU reference, teacher-forced: the reference runs once over the
// prompt and the continuation, and each generated token must be the reference's argmax at
// its position. Not the prompt-logit comparison (each test does that with ref::nmse).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace tdm::test {

// `logits` holds the reference's n_vocab logits for every position of prompt + generated.
// A token that is not the reference's argmax passes only where the reference itself cannot
// tell (its logit within 1e-3 relative of the best), and at most one such near tie is
// allowed. Failures name `label`, the step and both tokens.
void expect_greedy_follows_teacher(std::span<const int32_t> prompt, std::span<const int32_t> generated,
                                   std::span<const float> logits, uint32_t n_vocab, const std::string& label);

}  // namespace tdm::test
