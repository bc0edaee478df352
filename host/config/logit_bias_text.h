/* SPDX-License-Identifier: Apache-2.0 */
// host/config/logit_bias_text.h: one logit bias as llama.cpp spells it on its command line,
// TOKEN followed by +BIAS or -BIAS ("15043+1", "2-100"), which `--logit-bias` and the
// [sampling] logit_bias list of the config file take. Not here: applying a bias
// (sampling/sampler.h) or its ranges, which the sampler's validate() checks.
#pragma once

#include "common/error.h"

#include <cstdint>
#include <string_view>

namespace tdm {

struct LogitBiasText {
    int32_t token = 0;
    float bias = 0.0f;
};

// Fails quoting the text when it is not a token id (0 or more) followed by a sign and a
// finite number. The message does not name the setting; callers add that.
Result<LogitBiasText> parse_logit_bias(std::string_view text);

}  // namespace tdm
