/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/logits_check.h: a forward pass whose logits are NaN or infinite is an
// error, not a token. Without this check, broken weights or a broken kernel make the
// in-graph argmax return token 0 for every step and generation "succeeds".
// Always on and cheap: per output row only the logit at the argmax is read (a row that
// is all NaN has a NaN there). TANDEM_CHECK_NAN=1 scans every logit of every row, which
// also catches a row where only some logits are NaN.
// Not here: NaN in the weights themselves (model/weight_check.h), which is refused at load.
#pragma once

#include "common/error.h"
#include "engine/runner.h"

#include <cstdint>
#include <span>
#include <vector>

namespace tdm {

// Positions of the rows whose logits the forward pass of `in` returns, in output order.
std::vector<int32_t> output_positions(const ForwardInput& in);

// An error naming the position of the first output row with a NaN or infinite logit.
// `positions`: output_positions() of the pass that produced `out`.
Status check_logits_finite(const ForwardOutput& out, uint32_t n_vocab, std::span<const int32_t> positions);

// Whether TANDEM_CHECK_NAN asks for every logit to be scanned (read once per process).
bool full_logits_check();

}  // namespace tdm
