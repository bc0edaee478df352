/* SPDX-License-Identifier: Apache-2.0 */
// tests/support/gguf_edit.h: copy a GGUF file with one deliberate defect
// (a tensor removed, reshaped or retyped, a metadata string changed, one element
// made NaN), for tests of the loader's and the runtime's error messages on
// otherwise real models.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"

namespace tdm::test {

struct GgufEdit {
    std::string drop_tensor;        // tensor left out
    std::string reshape_tensor;     // tensor whose ne[1] is halved (data truncated to match)
    std::string retype_tensor;      // tensor rewritten as `retype_to` (zero data of the right size)
    uint32_t retype_to = 16;        // default: IQ2_XXS, which tandem cannot compute with
    std::string set_key, set_value; // a string metadata value replaced
    std::string nan_tensor;         // an f32 or f16 tensor whose element `nan_element` becomes NaN
    uint64_t nan_element = 0;
};

Status copy_gguf_with_edit(const std::string& src, const std::string& dst, const GgufEdit& edit);

}  // namespace tdm::test
