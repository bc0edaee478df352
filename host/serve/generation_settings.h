/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/generation_settings.h: the [sampling] and [speculative] settings of a Config
// (config/config.h) as the runtime's parameters: the sampler's, the speculative round's, and
// which speculative types were asked for. Not the drafters themselves (serve/make_drafters.h).
//
// In the serving module, not in cli/, because make_drafters reads them and a front end other
// than the CLI sets up a server from the same settings; the CLI's commands use them from here.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "sampling/sampler.h"
#include "speculative/round.h"

namespace tdm {

// The speculative types asked for, spelled with '-' (ngram_simple is ngram-simple); "draft"
// is implied by -md alone; empty means plain decoding.
std::vector<std::string> spec_types(const Config& config);

// Whether speculation was turned off explicitly (--spec-type none).
bool speculation_off(const Config& config);

SpecParams spec_params(const Config& config);
SamplerParams sampler_params(const Config& config);

}  // namespace tdm
