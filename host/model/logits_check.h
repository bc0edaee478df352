/* SPDX-License-Identifier: Apache-2.0 */
// host/model/logits_check.h: a forward pass whose logits are NaN or infinite is an
// error, not a token. Without this check, broken weights or a broken kernel make the
// in-graph argmax return token 0 for every step and generation "succeeds".
// Always on and cheap: per output row only the logit at the argmax is read (a row that
// is all NaN has a NaN there).
// TANDEM_CHECK_NAN=1 is the debugging mode (Runner::set_nan_debug): every logit of every
// row is scanned, which also catches a row where only some logits are NaN, and every op's
// result is probed as the graph runs (graph/finite_probe.h), so that the error names the
// first op, and the layer, whose output became non-finite.
// Not here: NaN in the weights themselves (model/weight_check.h), which is refused at load.
#pragma once

#include "common/error.h"
#include "model/runner.h"
#include "graph/executor.h"

#include <cstdint>
#include <span>
#include <vector>

namespace tdm {

// Positions of the rows whose logits the forward pass of `in` returns, in output order.
std::vector<int32_t> output_positions(const ForwardInput& in);

// Whether TANDEM_CHECK_NAN asks for the debugging mode (read once per process).
bool full_logits_check();

// An error naming the position of the first output row with a NaN or infinite logit.
// `positions`: output_positions() of the pass that produced `out`. `scan_all`: every
// logit rather than the one at each row's argmax.
Status check_logits_finite(const ForwardOutput& out, uint32_t n_vocab, std::span<const int32_t> positions,
                           bool scan_all = full_logits_check());

// `error` (from check_logits_finite) extended with the first op of `graph`'s last run
// whose result was non-finite, when the graph was compiled with probes and one was.
Error with_non_finite_origin(const Error& error, const CompiledGraph& graph);

}  // namespace tdm
