// SPDX-License-Identifier: Apache-2.0
// host/common/dtype.cpp: type traits table (ggml-common.h block sizes).
#include "common/dtype.h"

#include <cstring>

namespace tdm {
namespace {

struct Entry {
    uint32_t id;
    DTypeTraits traits;
};

constexpr Entry kSupported[] = {
    {0, {"f32", 1, 4, false}},      {1, {"f16", 1, 2, false}},
    {2, {"q4_0", 32, 18, true}},    {6, {"q5_0", 32, 22, true}},
    {7, {"q5_1", 32, 24, true}},    {8, {"q8_0", 32, 34, true}},
    {12, {"q4_K", 256, 144, true}}, {13, {"q5_K", 256, 176, true}},
    {14, {"q6_K", 256, 210, true}}, {24, {"i8", 1, 1, false}},
    {25, {"i16", 1, 2, false}},     {26, {"i32", 1, 4, false}},
    {27, {"i64", 1, 8, false}},
    {30, {"bf16", 1, 2, false}},
};

// Every ggml type id up to 42 (docs/formats/gguf.md A.6); empty = removed id.
constexpr std::string_view kGgmlNames[] = {
    "f32",     "f16",     "q4_0",    "q4_1",    "", "", "q5_0", "q5_1", "q8_0", "q8_1",
    "q2_K",    "q3_K",    "q4_K",    "q5_K",    "q6_K", "q8_K", "iq2_xxs", "iq2_xs", "iq3_xxs",
    "iq1_s",   "iq4_nl",  "iq3_s",   "iq2_s",   "iq4_xs", "i8", "i16", "i32", "i64", "f64",
    "iq1_m",   "bf16",    "",        "",        "", "tq1_0", "tq2_0", "", "", "", "mxfp4",
    "nvfp4",   "q1_0",    "q2_0",
};

}  // namespace

const DTypeTraits* dtype_traits(uint32_t id) {
    for (const Entry& e : kSupported)
        if (e.id == id) return &e.traits;
    return nullptr;
}

std::string_view ggml_type_name(uint32_t id) {
    if (id < sizeof(kGgmlNames) / sizeof(kGgmlNames[0]) && !kGgmlNames[id].empty())
        return kGgmlNames[id];
    return "unknown";
}

bool parse_dtype(std::string_view name, DType* out) {
    for (const Entry& e : kSupported) {
        if (e.traits.name.size() != name.size()) continue;
        bool eq = true;
        for (size_t i = 0; i < name.size(); ++i) {
            char a = e.traits.name[i], b = name[i];
            if (a >= 'A' && a <= 'Z') a = char(a - 'A' + 'a');
            if (b >= 'A' && b <= 'Z') b = char(b - 'A' + 'a');
            if (a != b) { eq = false; break; }
        }
        if (eq) {
            *out = static_cast<DType>(e.id);
            return true;
        }
    }
    return false;
}

}  // namespace tdm
