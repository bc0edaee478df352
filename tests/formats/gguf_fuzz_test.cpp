// SPDX-License-Identifier: Apache-2.0
// tests/formats/gguf_fuzz_test.cpp: deterministic mutation "fuzzing" of a small valid
// GGUF: every truncation, every byte replaced by a few values, and seeded random
// multi-byte corruptions. open() must return an error or a file whose every exposed
// pointer stays inside the buffer; it must never crash. Best run under ASan too.
// To add a case: add a mutation strategy to one of the loops below; keep it seeded.
#include <gtest/gtest.h>

#include "formats/gguf.h"
#include "support/gguf_builder.h"

#include <random>

using namespace tdm;

namespace {

struct Tally {
    int ok = 0;
    int failed = 0;
};

// Parses `bytes` and touches everything the reader exposes, so that an out-of-bounds
// pointer or length shows up as a failed check (or an ASan report).
void exercise(const std::string& bytes, Tally& tally) {
    auto r = GgufFile::from_memory("fuzz.gguf", bytes);
    if (!r.ok()) {
        ++tally.failed;
        EXPECT_FALSE(r.error().message().empty());
        return;
    }
    ++tally.ok;
    const GgufFile& f = **r;
    const uint8_t* lo = f.file().data();
    const uint8_t* hi = lo + f.file().size();
    for (const GgufKV& kv : f.kvs()) {
        const GgufValue& v = kv.value;
        EXPECT_TRUE(v.data >= lo && v.data + v.nbytes <= hi) << kv.key;
        for (std::string_view s : gguf_string_elements(v))
            EXPECT_TRUE(reinterpret_cast<const uint8_t*>(s.data()) >= lo &&
                        reinterpret_cast<const uint8_t*>(s.data()) + s.size() <= hi);
        // Results are irrelevant; the getters must simply not misbehave.
        (void)f.get_uint(kv.key);
        (void)f.get_int(kv.key);
        (void)f.get_float(kv.key);
        (void)f.get_bool(kv.key);
        (void)f.get_string(kv.key);
        (void)f.get_int_array(kv.key);
        (void)f.get_float_array(kv.key);
        (void)f.get_string_array(kv.key);
        if (auto b = f.get_bool_array(kv.key); b.ok()) {
            EXPECT_EQ(b->size(), kv.value.count);
        }
    }
    for (const GgufTensorInfo& t : f.tensors()) {
        const uint8_t* p = f.tensor_data(t);
        ASSERT_TRUE(p >= lo && t.nbytes <= uint64_t(hi - p)) << t.name;
        const volatile uint8_t* vp = p;  // read every byte (checked by ASan builds)
        for (uint64_t i = 0; i < t.nbytes; ++i) (void)vp[i];
    }
}

std::string seed_file() {
    std::string s = tdm::test::small_valid_gguf();
    EXPECT_GT(s.size(), 200u);
    return s;
}

}  // namespace

TEST(GgufFuzz, every_truncation_is_refused_or_safe) {
    const std::string base = seed_file();
    Tally tally;
    for (size_t n = 0; n <= base.size(); ++n) exercise(base.substr(0, n), tally);
    EXPECT_GT(tally.failed, 0);
    EXPECT_GT(tally.ok, 0);  // the full file, and cuts inside the last tensor's padding
}

TEST(GgufFuzz, every_single_byte_mutation_is_refused_or_safe) {
    const std::string base = seed_file();
    Tally tally;
    for (size_t i = 0; i < base.size(); ++i) {
        for (int variant = 0; variant < 4; ++variant) {
            std::string m = base;
            uint8_t b = uint8_t(m[i]);
            const uint8_t values[4] = {0x00, 0xff, uint8_t(b ^ 0x80), uint8_t(b + 1)};
            m[i] = char(values[variant]);
            exercise(m, tally);
        }
    }
    EXPECT_GT(tally.failed, 0);
    EXPECT_GT(tally.ok, 0);
}

TEST(GgufFuzz, seeded_random_corruptions_are_refused_or_safe) {
    const std::string base = seed_file();
    std::mt19937_64 rng(0x7a4d3e);
    // Field-sized values that tend to reach edge cases: zero, one, sign bits, maxima,
    // and sizes near the file's own.
    const uint64_t interesting[] = {0,
                                    1,
                                    2,
                                    3,
                                    4,
                                    31,
                                    32,
                                    255,
                                    uint64_t(base.size()),
                                    uint64_t(base.size()) - 8,
                                    0x7fffffffull,
                                    0xffffffffull,
                                    uint64_t(1) << 30,
                                    uint64_t(1) << 60,
                                    uint64_t(1) << 63,
                                    ~uint64_t(0)};
    Tally tally;
    for (int iter = 0; iter < 20000; ++iter) {
        std::string m = base;
        int edits = 1 + int(rng() % 4);
        for (int e = 0; e < edits; ++e) {
            size_t at = size_t(rng() % m.size());
            switch (rng() % 3) {
                case 0:  // random byte
                    m[at] = char(rng());
                    break;
                case 1: {  // an interesting 4- or 8-byte value
                    uint64_t v = interesting[rng() % (sizeof(interesting) / sizeof(interesting[0]))];
                    size_t width = (rng() & 1) ? 8 : 4;
                    for (size_t k = 0; k < width && at + k < m.size(); ++k) m[at + k] = char(v >> (8 * k));
                    break;
                }
                default:  // cut the tail
                    m.resize(at);
                    break;
            }
            if (m.empty()) break;
        }
        exercise(m, tally);
    }
    EXPECT_GT(tally.failed, 0);
    EXPECT_GT(tally.ok, 0);
}
