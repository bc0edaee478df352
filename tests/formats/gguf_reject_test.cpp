// SPDX-License-Identifier: Apache-2.0
// tests/formats/gguf_reject_test.cpp: every malformed GGUF the reader must refuse, each
// checked for an error message that names the problem (DESIGN.md invariant 5).
// To add a case: build the bytes with test::GgufBuilder (it validates nothing), open
// them with GgufFile::from_memory, and check the message with fails_with().
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "formats/gguf.h"
#include "support/gguf_builder.h"

#include <cstring>

using namespace tdm;
using tdm::test::fails_with;
using tdm::test::GgufBuilder;

namespace {

Result<std::unique_ptr<GgufFile>> parse(const GgufBuilder& b) { return GgufFile::from_memory("bad.gguf", b.bytes()); }
Result<std::unique_ptr<GgufFile>> parse(const std::string& s) { return GgufFile::from_memory("bad.gguf", s); }

// Header + one tensor info for `w` (F32) + padding + data: a valid file to break.
GgufBuilder one_tensor(std::vector<int64_t> ne, uint32_t type, uint64_t offset, size_t data_bytes) {
    GgufBuilder b;
    b.header(3, 1, 0).tensor_info("w", ne, type, offset).pad_to(32).zeros(data_bytes);
    return b;
}

}  // namespace

TEST(GgufReject, gguf_accepts_the_baseline_files_these_tests_break) {
    EXPECT_TRUE(parse(one_tensor({4, 2}, 0, 0, 32)).ok());
    EXPECT_TRUE(parse(GgufBuilder().header(2, 0, 0)).ok());  // v2 parses like v3
    EXPECT_EQ((*parse(GgufBuilder().header(2, 0, 0)))->version(), 2u);
    // No tensors: the padding before the (empty) data section may be absent.
    auto f = parse(GgufBuilder().header(3, 0, 1).kv_u32("a", 1));
    ASSERT_TRUE(f.ok());
    EXPECT_EQ((*f)->tensors().size(), 0u);
}

TEST(GgufReject, gguf_rejects_bad_magic_and_shows_the_first_bytes) {
    EXPECT_TRUE(fails_with(parse(std::string("PK\x03\x04rest of a zip", 17)),
                           {"bad.gguf", "not a GGUF file", "50 4b 03 04"}));
    EXPECT_TRUE(fails_with(parse(std::string("GG")), {"not a GGUF file", "47 47]"}));
    EXPECT_TRUE(fails_with(parse(std::string()), {"not a GGUF file", "[]"}));
}

TEST(GgufReject, gguf_rejects_unsupported_versions_naming_them) {
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(1, 0, 0)), {"version 1", "supported versions: 2 and 3"}));
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(0, 0, 0)), {"version 0", "supported versions: 2 and 3"}));
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(4, 0, 0)), {"version 4", "supported versions: 2 and 3"}));
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(0x03000000, 0, 0)),
                           {"0x03000000", "byte-swapped", "versions 2 and 3"}));
}

TEST(GgufReject, gguf_rejects_truncated_header) {
    std::string h = GgufBuilder().header(3, 0, 0).bytes();
    EXPECT_TRUE(fails_with(parse(h.substr(0, 6)), "truncated at offset 4 while reading version"));
    EXPECT_TRUE(fails_with(parse(h.substr(0, 12)), "truncated at offset 8 while reading tensor count"));
    EXPECT_TRUE(fails_with(parse(h.substr(0, 23)), "truncated at offset 16 while reading metadata entry count"));
}

TEST(GgufReject, gguf_rejects_truncated_metadata) {
    std::string full = GgufBuilder().header(3, 0, 1).kv_string("general.name", "abcdef").bytes();
    // Too few bytes for even the smallest entry; then cuts inside the type and the data.
    EXPECT_TRUE(fails_with(parse(full.substr(0, 30)),
                           {"truncated at offset 24 while reading 1 metadata entries", "6 left"}));
    EXPECT_TRUE(fails_with(parse(full.substr(0, 40)), {"metadata entry 0", "truncated at offset 32 while reading key"}));
    EXPECT_TRUE(fails_with(parse(full.substr(0, 24 + 8 + 12 + 2)),
                           {"key 'general.name'", "truncated at offset 44 while reading value type"}));
    EXPECT_TRUE(fails_with(parse(full.substr(0, full.size() - 1)),
                           {"key 'general.name'", "truncated at offset 56 while reading string value",
                            "need 6 bytes, 5 left"}));
    auto scalar = GgufBuilder().header(3, 0, 1).str("k").u32(10 /*UINT64*/).u32(0).bytes();
    EXPECT_TRUE(fails_with(parse(scalar), {"key 'k'", "while reading scalar value"}));
}

TEST(GgufReject, gguf_rejects_counts_that_cannot_fit_before_allocating) {
    // 2^62 metadata entries / tensors in a 24-byte file.
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(3, 0, uint64_t(1) << 62)),
                           {"truncated at offset 24", "4611686018427387904 metadata entries"}));
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(3, uint64_t(1) << 62, 0)),
                           {"truncated at offset 24", "tensor infos"}));
    // Arrays claiming 2^60 elements: refused by comparing count * element size to what
    // is left, so no vector of 2^60 entries is ever requested.
    for (uint32_t elem : {0u /*UINT8*/, 8u /*STRING*/, 12u /*FLOAT64*/}) {
        auto b = GgufBuilder().header(3, 0, 1).str("arr").u32(9).u32(elem).u64(uint64_t(1) << 60).zeros(64);
        EXPECT_TRUE(fails_with(parse(b), {"key 'arr'", "truncated at offset", "array of 1152921504606846976"}));
    }
    // A string array whose count fits, but whose last string runs off the end.
    auto s = GgufBuilder().header(3, 0, 1).str("arr").u32(9).u32(8).u64(2).str("ok").u64(100).raw("xy");
    EXPECT_TRUE(fails_with(parse(s), {"key 'arr'", "array element 1", "truncated"}));
}

TEST(GgufReject, gguf_rejects_truncated_and_oversized_bool_arrays) {
    // BOOL (7) arrays are one byte per element: a count past the end is refused before
    // anything is read or allocated, naming the key, the offset and the count.
    auto huge = GgufBuilder().header(3, 0, 1).str("pattern").u32(9).u32(7).u64(uint64_t(1) << 62).zeros(8);
    EXPECT_TRUE(fails_with(parse(huge), {"key 'pattern'", "truncated at offset 55", "array of 4611686018427387904 BOOL",
                                         "needs at least 1 bytes per element, 8 left"}));
    auto cut = GgufBuilder().header(3, 0, 1).str("pattern").u32(9).u32(7).u64(6).u8(1).u8(0).u8(1);
    EXPECT_TRUE(fails_with(parse(cut), {"key 'pattern'", "array of 6 BOOL", "3 left"}));
    auto no_count = GgufBuilder().header(3, 0, 1).str("pattern").u32(9).u32(7).u32(6);
    EXPECT_TRUE(fails_with(parse(no_count), {"key 'pattern'", "while reading array length"}));
    // Bytes other than 0 and 1 are true, as in llama.cpp's reader (docs/formats/gguf.md A.3.2).
    auto odd = GgufBuilder().header(3, 0, 1).str("pattern").u32(9).u32(7).u64(3).u8(2).u8(0).u8(0xff);
    auto f = parse(odd);
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_EQ(*(*f)->get_bool_array("pattern"), (std::vector<bool>{true, false, true}));
}

TEST(GgufReject, gguf_rejects_strings_over_1_gib_or_past_the_end) {
    auto huge = GgufBuilder().header(3, 0, 1).str("k").u32(8).u64((uint64_t(1) << 30) + 1).zeros(16);
    EXPECT_TRUE(fails_with(parse(huge), {"key 'k'", "1073741825 bytes", "1 GiB limit"}));
    auto key = GgufBuilder().header(3, 0, 1).u64(uint64_t(1) << 40).raw("k").zeros(16);
    EXPECT_TRUE(fails_with(parse(key), {"metadata entry 0", "1 GiB limit"}));
    auto past = GgufBuilder().header(3, 0, 1).str("k").u32(8).u64(1000).raw("short");
    EXPECT_TRUE(fails_with(parse(past), {"key 'k'", "truncated at offset", "need 1000 bytes, 5 left"}));
    auto name = GgufBuilder().header(3, 1, 0).u64(500).raw("w").zeros(40);
    EXPECT_TRUE(fails_with(parse(name), {"tensor info 0", "while reading tensor name"}));
}

TEST(GgufReject, gguf_rejects_duplicate_empty_and_invalid_keys) {
    auto dup = GgufBuilder().header(3, 0, 3).kv_u32("a", 1).kv_u32("b", 2).kv_string("a", "x");
    EXPECT_TRUE(fails_with(parse(dup), {"bad.gguf", "duplicate key 'a'", "entries 0 and 2"}));
    auto empty = GgufBuilder().header(3, 0, 1).kv_u32("", 1);
    EXPECT_TRUE(fails_with(parse(empty), "metadata entry 0 has an empty key"));
    // Control bytes in a hostile key are escaped in the message.
    auto ctl = GgufBuilder().header(3, 0, 1).str(std::string("k\x01\n", 3)).u32(99).u32(0);
    EXPECT_TRUE(fails_with(parse(ctl), {"key 'k\\x01\\x0a'", "invalid value type 99"}));
}

TEST(GgufReject, gguf_rejects_invalid_value_types_and_nested_arrays) {
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(3, 0, 1).str("k").u32(13).u32(0)),
                           {"key 'k'", "invalid value type 13"}));
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(3, 0, 1).str("k").u32(9).u32(77).u64(0)),
                           {"key 'k'", "invalid array element type 77"}));
    auto nested = GgufBuilder().header(3, 0, 1).str("k").u32(9).u32(9).u64(1).u32(4).u64(1).u32(5);
    EXPECT_TRUE(fails_with(parse(nested), {"key 'k'", "nested arrays are not supported"}));
}

TEST(GgufReject, gguf_rejects_bad_general_alignment) {
    auto wrong_type = GgufBuilder().header(3, 0, 1).str("general.alignment").u32(10).u64(32);
    EXPECT_TRUE(fails_with(parse(wrong_type), {"general.alignment must be UINT32", "found UINT64"}));
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(3, 0, 1).kv_u32("general.alignment", 48)),
                           "general.alignment = 48 is not a power of two"));
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(3, 0, 1).kv_u32("general.alignment", 0)),
                           "general.alignment = 0 is not a power of two"));
    auto ok = parse(GgufBuilder().header(3, 0, 1).kv_u32("general.alignment", 64));
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ((*ok)->alignment(), 64u);
}

TEST(GgufReject, gguf_rejects_truncated_tensor_infos) {
    // One record: name (8 + 40) at 24, n_dims at 72, 4 dims at 76 (8 bytes each), type at 108, offset
    // at 112, record end 120. Each cut lands inside a different field.
    const std::string name(40, 'n');
    std::string full = GgufBuilder().header(3, 1, 0).tensor_info(name, {4, 1, 1, 1}, 0, 0).bytes();
    ASSERT_EQ(full.size(), 120u);
    EXPECT_TRUE(fails_with(parse(full.substr(0, 40)),
                           {"truncated at offset 24 while reading 1 tensor infos", "16 left"}));
    const struct {
        size_t cut;
        const char* what;
    } cuts[] = {{60, "offset 32 while reading tensor name"}, {74, "offset 72 while reading n_dims"},
                {90, "offset 84 while reading dimensions"},  {110, "offset 108 while reading type"},
                {115, "offset 112 while reading data offset"}};
    for (const auto& c : cuts) {
        SCOPED_TRACE(c.what);
        EXPECT_TRUE(fails_with(parse(full.substr(0, c.cut)), {"truncated at", c.what}));
    }
}

TEST(GgufReject, gguf_rejects_bad_dims) {
    EXPECT_TRUE(fails_with(parse(GgufBuilder().header(3, 1, 0).str("w").u32(0).u32(0).u64(0).zeros(32)),
                           {"tensor 'w'", "n_dims = 0 (must be 1 to 4)"}));
    EXPECT_TRUE(fails_with(parse(one_tensor({1, 1, 1, 1, 1}, 0, 0, 4)), {"tensor 'w'", "n_dims = 5"}));
    EXPECT_TRUE(fails_with(parse(one_tensor({4, -2}, 0, 0, 32)), {"tensor 'w'", "ne[1] = -2 is negative"}));
    // 2^32 * 2^32 elements overflow int64; 2^62 F32 elements overflow the byte count.
    EXPECT_TRUE(fails_with(parse(one_tensor({int64_t(1) << 32, int64_t(1) << 32}, 0, 0, 32)),
                           {"tensor 'w'", "element count overflows"}));
    EXPECT_TRUE(fails_with(parse(one_tensor({int64_t(1) << 62}, 0, 0, 32)), {"tensor 'w'", "byte size overflows"}));
}

TEST(GgufReject, gguf_rejects_unknown_types_and_partial_blocks) {
    EXPECT_TRUE(fails_with(parse(one_tensor({32}, 4, 0, 32)), {"tensor 'w'", "unknown ggml type id 4"}));
    EXPECT_TRUE(fails_with(parse(one_tensor({32}, 43, 0, 32)), {"tensor 'w'", "unknown ggml type id 43"}));
    EXPECT_TRUE(fails_with(parse(one_tensor({100, 2}, 12, 0, 288)),
                           {"tensor 'w'", "ne[0] = 100 is not a multiple of the q4_K block size 256"}));
    // A type tandem cannot compute with still opens (refusing it is the loader's job).
    auto iq = parse(one_tensor({256, 2}, 16, 0, 132));
    ASSERT_TRUE(iq.ok()) << iq.error().message();
    EXPECT_EQ((*iq)->tensors()[0].type, 16u);
    EXPECT_EQ((*iq)->tensors()[0].nbytes, 132u);
}

TEST(GgufReject, gguf_rejects_duplicate_tensor_names) {
    auto b = GgufBuilder().header(3, 2, 0).tensor_info("w", {8}, 0, 0).tensor_info("w", {8}, 0, 32).pad_to(32).zeros(64);
    EXPECT_TRUE(fails_with(parse(b), {"duplicate tensor name 'w'", "tensor infos 0 and 1"}));
}

TEST(GgufReject, gguf_rejects_unaligned_tensor_offsets) {
    EXPECT_TRUE(fails_with(parse(one_tensor({4}, 0, 16, 64)),
                           {"tensor 'w'", "data offset 16 is not a multiple of the alignment 32"}));
}

TEST(GgufReject, gguf_rejects_truncated_tensor_data) {
    // Data section starts at 96; the tensor needs [96, 128) but the file ends at 120.
    std::string full = one_tensor({4, 2}, 0, 0, 32).bytes();
    ASSERT_EQ(full.size(), 128u);
    EXPECT_TRUE(fails_with(parse(full.substr(0, 120)),
                           {"bad.gguf", "tensor 'w'", "extends beyond the end of the file", "[96, 128)",
                            "120-byte file"}));
    // An offset far past the end, and one that overflows 64 bits with the data offset.
    EXPECT_TRUE(fails_with(parse(one_tensor({4, 2}, 0, uint64_t(1) << 40, 32)), {"tensor 'w'", "beyond the end"}));
    EXPECT_TRUE(fails_with(parse(one_tensor({4, 2}, 0, ~uint64_t(31), 32)), {"tensor 'w'", "overflows 64 bits, beyond the end"}));
}

TEST(GgufReject, gguf_open_names_a_missing_file) {
    EXPECT_TRUE(fails_with(GgufFile::open("/nonexistent/model.gguf"), {"/nonexistent/model.gguf", "cannot open"}));
}

namespace {

// Two F32 tensors 'a' and 'b' with the given element counts and data offsets, in that
// order in the tensor list, over a data section of `data_bytes` zeros.
GgufBuilder two_tensors(int64_t a_ne, uint64_t a_off, int64_t b_ne, uint64_t b_off, size_t data_bytes) {
    GgufBuilder b;
    b.header(3, 2, 0).tensor_info("a", {a_ne}, 0, a_off).tensor_info("b", {b_ne}, 0, b_off).pad_to(32).zeros(data_bytes);
    return b;
}

}  // namespace

TEST(GgufReject, gguf_rejects_tensors_that_share_bytes) {
    // Header 24 + two infos of 8 + 1 + 4 + 8 + 4 + 8 = 33 bytes: the data section starts at 96.
    EXPECT_TRUE(fails_with(parse(two_tensors(8, 0, 8, 0, 64)),
                           {"tensor 'b' (file bytes [96, 128)) overlaps tensor 'a' (file bytes [96, 128))"}));
    // 'a' retyped or reshaped to 16 elements runs into 'b'.
    EXPECT_TRUE(fails_with(parse(two_tensors(16, 0, 8, 32, 64)),
                           {"tensor 'b' (file bytes [128, 160)) overlaps tensor 'a' (file bytes [96, 160))"}));
}

TEST(GgufReject, gguf_rejects_tensor_data_out_of_list_order) {
    EXPECT_TRUE(fails_with(parse(two_tensors(8, 32, 8, 0, 64)),
                           {"tensor 'b' (file bytes [96, 128)) is stored before tensor 'a' (file bytes [128, 160))",
                            "must follow the order of the list"}));
}

TEST(GgufReject, gguf_accepts_gaps_and_empty_tensors_between_tensors) {
    auto gap = parse(two_tensors(8, 0, 8, 64, 96));
    ASSERT_TRUE(gap.ok()) << gap.error().message();
    EXPECT_EQ((*gap)->tensors()[1].file_offset, 160u);
    // An empty tensor occupies no bytes, wherever its offset points.
    auto empty = parse(two_tensors(8, 0, 0, 0, 32));
    ASSERT_TRUE(empty.ok()) << empty.error().message();
}
