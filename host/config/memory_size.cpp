// SPDX-License-Identifier: Apache-2.0
// host/config/memory_size.cpp: parsing and printing memory sizes. Integer arithmetic
// throughout, so "1.5G" is exactly 1610612736 and overflow is detected, not rounded away.
#include "config/memory_size.h"

#include <cctype>

namespace tdm {
namespace {

struct Unit {
    const char* name;
    uint64_t bytes;
};

constexpr uint64_t kKi = 1024;
constexpr Unit kUnits[] = {
    {"", 1},           {"b", 1},
    {"k", kKi},        {"ki", kKi},        {"kib", kKi},        {"kb", 1000},
    {"m", kKi * kKi},  {"mi", kKi * kKi},  {"mib", kKi * kKi},  {"mb", 1000 * 1000},
    {"g", kKi * kKi * kKi}, {"gi", kKi * kKi * kKi}, {"gib", kKi * kKi * kKi}, {"gb", 1000ull * 1000 * 1000},
    {"t", kKi * kKi * kKi * kKi}, {"ti", kKi * kKi * kKi * kKi}, {"tib", kKi * kKi * kKi * kKi},
    {"tb", 1000ull * 1000 * 1000 * 1000},
};

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<uint64_t> parse_memory_size(std::string_view text) {
    const std::string_view s = trim(text);
    if (s.empty()) return Error("empty memory size (expected e.g. 4096, 512MiB, 8GiB)");
    if (s.front() == '-') return Error::format("'{}': a memory size cannot be negative", text);

    size_t i = 0;
    unsigned __int128 whole = 0;
    const size_t digits_start = i;
    for (; i < s.size() && is_digit(s[i]); ++i) {
        whole = whole * 10 + static_cast<unsigned>(s[i] - '0');
        if (whole > UINT64_MAX) return Error::format("'{}' is too large", text);
    }
    const bool has_whole = i > digits_start;
    unsigned __int128 frac = 0, frac_scale = 1;
    bool has_frac = false;
    if (i < s.size() && s[i] == '.') {
        ++i;
        for (; i < s.size() && is_digit(s[i]); ++i) {
            has_frac = true;
            if (frac_scale < 1000000000000000000ull) {  // 18 digits are beyond any unit's precision
                frac = frac * 10 + static_cast<unsigned>(s[i] - '0');
                frac_scale *= 10;
            }
        }
    }
    if (!has_whole && !has_frac)
        return Error::format("'{}' is not a memory size (expected a number with an optional unit: "
                             "4096, 512MiB, 8GiB, 1.5G)", text);

    std::string unit(trim(s.substr(i)));
    for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const Unit* u = nullptr;
    for (const Unit& cand : kUnits)
        if (unit == cand.name) u = &cand;
    if (!u)
        return Error::format("'{}': unknown unit '{}' (use B, KiB, MiB, GiB, TiB or K, M, G, T for the "
                             "same; KB, MB, GB, TB mean powers of 1000)", text, trim(s.substr(i)));
    if (u->bytes == 1 && frac != 0)
        return Error::format("'{}': a byte count must be a whole number", text);

    const unsigned __int128 total = whole * u->bytes + frac * u->bytes / frac_scale;
    if (total > UINT64_MAX) return Error::format("'{}' is too large", text);
    return static_cast<uint64_t>(total);
}

std::string format_memory_size(uint64_t bytes) {
    static const char* kNames[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    uint64_t scale = 1;
    while (u < 6 && bytes / scale >= 1024) {
        scale *= 1024;
        ++u;
    }
    if (u == 0) return fmt::format("{} B", bytes);
    const uint64_t whole = bytes / scale;
    // Two decimals, rounded down so that the printed size never exceeds the real one.
    const uint64_t hundredths = static_cast<uint64_t>(static_cast<unsigned __int128>(bytes % scale) * 100 / scale);
    if (hundredths == 0) return fmt::format("{} {}", whole, kNames[u]);
    if (hundredths % 10 == 0) return fmt::format("{}.{} {}", whole, hundredths / 10, kNames[u]);
    return fmt::format("{}.{:02} {}", whole, hundredths, kNames[u]);
}

}  // namespace tdm
