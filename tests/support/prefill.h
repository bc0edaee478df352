/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/prefill.h: a prompt through a runner in chunks, for tests that want its
// logits or a KV holding it without generating (generation is engine/solo.h).
#pragma once

#include <functional>
#include <span>

#include "engine/generate.h"
#include "model/runner.h"

namespace tdm::test {

// Runs `prompt` at positions 0.. of `seq` in chunks of n_batch rows; returns the last
// chunk's output (its last row, or every row with logits_all). The sink gets every output
// row of every chunk with logits_all, else the last chunk's last row.
Result<ForwardOutput> prefill(Runner& runner, int seq, std::span<const int32_t> prompt, uint32_t n_batch,
                              bool logits_all, const LogitsSink& sink);

}  // namespace tdm::test
