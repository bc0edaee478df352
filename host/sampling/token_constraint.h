/* SPDX-License-Identifier: Apache-2.0 */
// host/sampling/token_constraint.h: the interface through which something that knows which
// token may come next (a grammar, a JSON schema, a forced tool call) limits a generation.
// Not here: any particular constraint (grammar/ builds them), or where the mask is applied
// (the engine's plain step and the speculative round's verify and drafts).
//
// Why an interface in sampling/: the engine and the speculative round only need to mask a
// row, ask about one token and move on; they must not depend on how a grammar works. The
// mask is applied to the raw logits before the sampler's chain (and before the greedy
// argmax), so a constrained greedy generation is one deterministic function of the logits,
// whether its tokens came from plain steps or from verified drafts.
//
// End of generation: a constraint is built knowing the model's end-of-generation token ids.
// It allows them exactly when what has been generated so far is a complete sentence of the
// constraint, and complete() says when nothing else can follow, so the engine can stop
// without spending a step on the end token.
#pragma once

#include "common/error.h"

#include <cstdint>
#include <memory>

namespace tdm {

class TokenConstraint {
public:
    virtual ~TokenConstraint() = default;

    // Sets to -infinity the logit of every token of [0, n_vocab) the constraint forbids in
    // its current state. Tokens the constraint does not know (ids past its vocabulary) are
    // forbidden. Not const: implementations may cache masks per state.
    virtual void mask(float* logits, int n_vocab) = 0;

    // Whether `token` may come next.
    virtual bool allows(int32_t token) = 0;

    // Moves past `token`. Fails, leaving the state unchanged, when allows(token) is false.
    virtual Status advance(int32_t token) = 0;

    // Only an end-of-generation token may follow: the output is complete.
    virtual bool complete() const = 0;

    // An independent copy of the current state. The speculative round advances copies over
    // the draft tokens to mask each verify row and to cut a draft at the first token the
    // constraint forbids; the original moves only over accepted tokens.
    virtual std::unique_ptr<TokenConstraint> clone() const = 0;
};

}  // namespace tdm
