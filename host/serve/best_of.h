/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/best_of.h: which of a completion's best_of sequences are its n choices: the n
// with the highest cumulative log-probability of their tokens, best first (vLLM's rule for
// best_of). Not the generating of them (serve/serve_backend.h).
#pragma once

#include "serve/backend.h"

#include <cstdint>
#include <span>
#include <vector>

namespace tdm::server {

// The indices of the n best outcomes, best first; ties go to the lower index.
std::vector<uint32_t> best_sequences(std::span<const Outcome> outcomes, uint32_t n);

}  // namespace tdm::server
