// SPDX-License-Identifier: Apache-2.0
// host/grammar/json_schema_int_range.cpp: see json_schema_int_range.h. Bounds are handled
// as digit strings, so int64's extremes need no special arithmetic.
#include "grammar/json_schema_int_range.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <vector>

namespace tdm {
namespace {

// Plain integers have at most this many digits (the converter's integral-part).
constexpr size_t kMaxDigits = 16;

std::string join_alternatives(const std::vector<std::string>& alts) {
    if (alts.size() == 1) return alts[0];
    std::string out = "(";
    for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
    return out + ")";
}

std::string digit_class(char lo, char hi) {
    if (lo == hi) return fmt::format("\"{}\"", lo);
    return fmt::format("[{}-{}]", lo, hi);
}

// The digit strings s with lo <= s <= hi, all three of one length (leading zeros allowed:
// these are the inner digits of a number).
std::string same_length(std::string_view lo, std::string_view hi) {
    if (lo.empty()) return "";
    size_t rest = lo.size() - 1;
    if (lo[0] == hi[0]) {
        if (rest == 0) return digit_class(lo[0], lo[0]);
        return digit_class(lo[0], lo[0]) + " " + same_length(lo.substr(1), hi.substr(1));
    }
    if (rest == 0) return digit_class(lo[0], hi[0]);
    bool lo_all_zero = lo.substr(1).find_first_not_of('0') == std::string_view::npos;
    bool hi_all_nine = hi.substr(1).find_first_not_of('9') == std::string_view::npos;
    std::vector<std::string> alts;
    char first = lo[0], last = hi[0];
    if (!lo_all_zero) {
        alts.push_back(digit_class(lo[0], lo[0]) + " " +
                       join_alternatives({same_length(lo.substr(1), std::string(rest, '9'))}));
        ++first;
    }
    std::string high_alt;
    if (!hi_all_nine) {
        high_alt = digit_class(hi[0], hi[0]) + " " +
                   join_alternatives({same_length(std::string(rest, '0'), hi.substr(1))});
        --last;
    }
    if (first <= last) alts.push_back(fmt::format("{} [0-9]{{{}}}", digit_class(first, last), rest));
    if (!high_alt.empty()) alts.push_back(high_alt);
    return join_alternatives(alts);
}

// The decimal numbers in [lo, hi] (hi absent: unbounded), no leading zeros.
std::string unsigned_range(uint64_t lo, std::optional<uint64_t> hi) {
    std::string los = std::to_string(lo);
    std::vector<std::string> alts;
    size_t max_len = hi ? std::to_string(*hi).size() : std::max(kMaxDigits, los.size());
    for (size_t d = los.size(); d <= max_len; ++d) {
        std::string a = d == los.size() ? los : "1" + std::string(d - 1, '0');
        std::string b = hi && d == max_len ? std::to_string(*hi) : std::string(d, '9');
        if (!hi && d > los.size()) {
            // every longer number: one alternative instead of one per length
            if (d <= kMaxDigits) alts.push_back(fmt::format("[1-9] [0-9]{{{},{}}}", d - 1, kMaxDigits - 1));
            break;
        }
        alts.push_back(same_length(a, b));
    }
    return join_alternatives(alts);
}

uint64_t magnitude(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max) {
    std::vector<std::string> alts;
    // negative numbers: "-" then magnitudes in [max(1, -max), -min]
    if (!min || *min < 0) {
        uint64_t lo = max && *max < 0 ? magnitude(*max) : 1;
        std::optional<uint64_t> hi;
        if (min) hi = magnitude(*min);
        alts.push_back("\"-\" " + unsigned_range(lo, hi));
    }
    // non-negative numbers in [max(0, min), max]
    if (!max || *max >= 0) {
        uint64_t lo = min && *min > 0 ? static_cast<uint64_t>(*min) : 0;
        std::optional<uint64_t> hi;
        if (max) hi = static_cast<uint64_t>(*max);
        alts.push_back(unsigned_range(lo, hi));
    }
    return join_alternatives(alts);
}

}  // namespace tdm
