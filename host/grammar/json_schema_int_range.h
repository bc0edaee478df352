/* SPDX-License-Identifier: Apache-2.0 */
// host/grammar/json_schema_int_range.h: a GBNF expression for the decimal integers of a
// range, digit by digit (as llama.cpp's converter's _build_min_max_int), so a schema's
// integer `minimum`/`maximum` is exact. Not here: the rest of the schema (json_schema.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tdm {

// The JSON integers n with min <= n <= max (an absent bound: unbounded, up to 16 digits as
// the converter's plain integers). No leading zeros, no "-0". Requires min <= max when
// both are given. The expression has no trailing whitespace rule.
std::string integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max);

}  // namespace tdm
