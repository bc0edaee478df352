/* SPDX-License-Identifier: Apache-2.0 */
// host/model/weight_check.h: refusing weights that hold NaN or infinity before they
// reach the device. A damaged or badly converted file otherwise loads, turns every
// logit into NaN and "generates" token 0. The scan reads the source bytes once: every
// element of F32/F16/BF16 tensors, and the f16 scales (d, and dmin where the format
// has one) of each quantized block, which is where a NaN in a quantized tensor lives
// (the quants themselves are small integers and cannot be NaN).
// On by default, for the target and its drafters (a draft model, a draft head's own
// store); `--no-check-weights` / model.check_weights = false turn it off for all of them.
// Not here: NaN logits at run time (model/logits_check.h).
#pragma once

#include "common/error.h"
#include "formats/model_source.h"

#include <cstdint>
#include <optional>
#include <string_view>

namespace tdm {

struct NonFinite {
    uint64_t index;     // element (plain types) or block (quantized types) in the tensor
    bool is_block;      // index counts blocks
    const char* field;  // quantized: "d" or "dmin"; plain: nullptr
    float value;        // NaN, +inf or -inf
};

// The first non-finite element or block scale of `t`, if any. Types the scan does not
// know (integer tensors) have nothing to report.
std::optional<NonFinite> find_non_finite(const SourceTensor& t);

// An error naming the file (`path`), the tensor and the first bad element or block
// when `t` holds a non-finite value.
Status check_weights_finite(std::string_view path, const SourceTensor& t);

}  // namespace tdm
