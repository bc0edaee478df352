/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/drafters.h: building the drafter chain from --spec-type / -md and
// the [speculative] settings, for `tandem run` and `tandem bench spec`.
#pragma once

#include <memory>
#include <vector>

#include "cli/commands.h"
#include "speculative/drafter.h"
#include "speculative/scheduler.h"

namespace tdm::cli {

struct DrafterChain {
    std::vector<std::unique_ptr<Drafter>> owned;
    std::vector<Drafter*> order;  // as asked each round
    bool empty() const { return order.empty(); }
};

// The speculative types asked for ("draft" is implied by -md alone); empty
// means plain decoding.
std::vector<std::string> spec_types(const Config& config);

// Whether speculation was turned off explicitly (--spec-type none).
bool speculation_off(const Config& config);

// Whether a loaded plugin has a draft head for the target's architecture (the
// file may still lack its layers).
Result<bool> draft_head_available(App& app, const Model& target);

// Creates the drafters for `target` in the configured order. Errors: an
// unknown type (the message lists what the plugins provide), `draft` without
// a draft model, an incompatible draft vocabulary, a draft head the file does
// not carry. `target_kv` is the pool draft heads may read. With no type given,
// the head the model carries (MTP/NextN) drafts if --spec-auto asks for it, or
// by default when `carried_head_by_default` (tandem chat) and speculation is
// not off; a head that cannot be built then means plain decoding.
Result<DrafterChain> make_drafters(App& app, const Model& target, const KvPool& target_kv,
                                   bool carried_head_by_default = false);

SpecParams spec_params(const Config& config);
SamplerParams sampler_params(const Config& config);

}  // namespace tdm::cli
