/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/drafter_choice.h: which of a server's loaded drafters a request's
// `speculative.type` picks. A request names one or several of them ("eagle3",
// "ngram-simple,draft-eagle3"), as --spec-type names a chain; each name must select a
// drafter the server loaded, by any of the names it answers to (DrafterChain::types: a
// head's every spec type, "draft" for what -md loaded). Not how the chosen drafters are
// handed to the request (serve/drafter_chain.h), nor the request's parsing
// (serve/openai_request.h).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "speculative/drafter.h"

namespace tdm {

// The drafters `request_type` names, as indices into `order` in the request's order. `types`
// holds the names each drafter of `order` answers to besides its own name() (it may be
// shorter than `order`). An error names the first unknown or repeated name and what is
// loaded (loaded_drafter_names).
Result<std::vector<size_t>> choose_drafters(std::span<Drafter* const> order,
                                            std::span<const std::vector<std::string>> types,
                                            std::string_view request_type);

// "eagle3 (also draft-eagle3, draft), ngram-simple": what a request may name.
std::string loaded_drafter_names(std::span<Drafter* const> order, std::span<const std::vector<std::string>> types);

}  // namespace tdm
