// SPDX-License-Identifier: Apache-2.0
// tests/formats/gguf_roundtrip_test.cpp: GgufWriter -> GgufFile round trips of every
// metadata type, typed getters, tensors of several types and alignments, and the
// docs/formats/gguf.md A.8 byte dump.
// To add a case: write it with GgufWriter, read it back with GgufFile::from_memory and
// compare; for byte-exact layout checks, spell the expected bytes out as in A.8.
#include <gtest/gtest.h>

#include "formats/expect_error.h"
#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "support/fixtures.h"
#include "writers/gguf_writer.h"

#include <algorithm>
#include <cstring>
#include <limits>

using namespace tdm;
using tdm::test::fails_with;

namespace {

std::unique_ptr<GgufFile> round_trip(const GgufWriter& w) {
    auto bytes = w.to_bytes();
    EXPECT_TRUE(bytes.ok()) << bytes.error().message();
    if (!bytes.ok()) return nullptr;
    auto f = GgufFile::from_memory("mem.gguf", *bytes);
    EXPECT_TRUE(f.ok()) << f.error().message();
    return f.ok() ? std::move(f).value() : nullptr;
}

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 31 + (i >> 8));
    return v;
}

}  // namespace

TEST(GgufRoundTrip, every_scalar_type_reads_back_with_its_type_and_value) {
    const std::string weird("a\0b\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z", 14);  // NUL, é, €, emoji
    GgufWriter w;
    w.add_u8("u8", 255);
    w.add_i8("i8", -128);
    w.add_u16("u16", 65535);
    w.add_i16("i16", -32768);
    w.add_u32("u32", 4294967295u);
    w.add_i32("i32", std::numeric_limits<int32_t>::min());
    w.add_u64("u64", std::numeric_limits<uint64_t>::max());
    w.add_i64("i64", std::numeric_limits<int64_t>::min());
    w.add_f32("f32", 0.1f);
    w.add_f64("f64", 1e300);
    w.add_bool("t", true);
    w.add_bool("f", false);
    w.add_string("s", weird);
    w.add_string("empty", "");
    auto f = round_trip(w);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->version(), 3u);
    EXPECT_EQ(f->alignment(), 32u);

    const char* keys[] = {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64",
                          "f32", "f64", "t", "f", "s", "empty"};
    const GgufType types[] = {GgufType::UINT8,   GgufType::INT8,    GgufType::UINT16, GgufType::INT16,
                              GgufType::UINT32,  GgufType::INT32,   GgufType::UINT64, GgufType::INT64,
                              GgufType::FLOAT32, GgufType::FLOAT64, GgufType::BOOL,   GgufType::BOOL,
                              GgufType::STRING,  GgufType::STRING};
    ASSERT_EQ(f->kvs().size(), 14u);
    for (size_t i = 0; i < 14; ++i) {  // insertion order is kept
        EXPECT_EQ(f->kvs()[i].key, keys[i]);
        EXPECT_EQ(f->kvs()[i].value.type, types[i]) << keys[i];
        EXPECT_EQ(f->kvs()[i].value.count, 1u);
    }
    EXPECT_EQ(*f->get_uint("u8"), 255u);
    EXPECT_EQ(*f->get_int("i8"), -128);
    EXPECT_EQ(*f->get_uint("u16"), 65535u);
    EXPECT_EQ(*f->get_int("i16"), -32768);
    EXPECT_EQ(*f->get_uint("u32"), 4294967295u);
    EXPECT_EQ(*f->get_int("i32"), std::numeric_limits<int32_t>::min());
    EXPECT_EQ(*f->get_uint("u64"), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(*f->get_int("i64"), std::numeric_limits<int64_t>::min());
    EXPECT_EQ(*f->get_float("f32"), double(0.1f));
    EXPECT_EQ(*f->get_float("f64"), 1e300);
    EXPECT_TRUE(*f->get_bool("t"));
    EXPECT_FALSE(*f->get_bool("f"));
    EXPECT_EQ(*f->get_string("s"), weird);
    EXPECT_EQ(*f->get_string("empty"), "");
    // Integers convert across widths when the value fits.
    EXPECT_EQ(*f->get_int("u8"), 255);
    EXPECT_TRUE(fails_with(f->get_uint("i8"), "negative"));
}

TEST(GgufRoundTrip, arrays_of_every_element_type_read_back) {
    const std::vector<std::string> strs = {"<s>", std::string("x\0y", 3), "", "\xe4\xb8\xad\xe6\x96\x87"};
    GgufWriter w;
    w.add_array("a.u8", std::vector<uint8_t>{0, 1, 255});
    w.add_array("a.i8", std::vector<int8_t>{-128, 0, 127});
    w.add_array("a.u16", std::vector<uint16_t>{0, 65535});
    w.add_array("a.i16", std::vector<int16_t>{-32768, 32767});
    w.add_array("a.u32", std::vector<uint32_t>{7, 4294967295u});
    w.add_array("a.i32", std::vector<int32_t>{-1, 2, -3});
    w.add_array("a.u64", std::vector<uint64_t>{1, uint64_t(1) << 40});
    w.add_array("a.i64", std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 5});
    w.add_array("a.f32", std::vector<float>{0.5f, -1.25f});
    w.add_array("a.f64", std::vector<double>{1e-300, 3.0});
    w.add_array("a.bool", std::vector<bool>{true, false, true});
    w.add_array("a.str", strs);
    w.add_array("a.empty", std::vector<int32_t>{});
    auto f = round_trip(w);
    ASSERT_TRUE(f);

    EXPECT_EQ(*f->get_int_array("a.u8"), (std::vector<int64_t>{0, 1, 255}));
    EXPECT_EQ(*f->get_int_array("a.i8"), (std::vector<int64_t>{-128, 0, 127}));
    EXPECT_EQ(*f->get_int_array("a.u16"), (std::vector<int64_t>{0, 65535}));
    EXPECT_EQ(*f->get_int_array("a.i16"), (std::vector<int64_t>{-32768, 32767}));
    EXPECT_EQ(*f->get_int_array("a.u32"), (std::vector<int64_t>{7, 4294967295LL}));
    EXPECT_EQ(*f->get_int_array("a.i32"), (std::vector<int64_t>{-1, 2, -3}));
    EXPECT_EQ(*f->get_int_array("a.u64"), (std::vector<int64_t>{1, int64_t(1) << 40}));
    EXPECT_EQ(*f->get_int_array("a.i64"), (std::vector<int64_t>{std::numeric_limits<int64_t>::min(), 5}));
    EXPECT_EQ(*f->get_float_array("a.f32"), (std::vector<double>{0.5, -1.25}));
    EXPECT_EQ(*f->get_float_array("a.f64"), (std::vector<double>{1e-300, 3.0}));
    EXPECT_EQ(*f->get_string_array("a.str"), strs);
    EXPECT_TRUE(f->get_int_array("a.empty")->empty());

    const GgufValue* b = f->find("a.bool");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->type, GgufType::ARRAY);
    EXPECT_EQ(b->elem_type, GgufType::BOOL);
    EXPECT_EQ(b->count, 3u);
    ASSERT_EQ(b->nbytes, 3u);
    EXPECT_EQ(std::memcmp(b->data, "\x01\x00\x01", 3), 0);
    EXPECT_EQ(*f->get_bool_array("a.bool"), (std::vector<bool>{true, false, true}));

    const GgufValue* s = f->find("a.str");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->elem_type, GgufType::STRING);
    EXPECT_EQ(s->count, 4u);
    EXPECT_EQ(s->nbytes, 4 * 8 + 3 + 3 + 0 + 6u);  // length prefixes + characters
    std::vector<std::string_view> views = gguf_string_elements(*s);
    ASSERT_EQ(views.size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(views[i], strs[i]);
    EXPECT_EQ(gguf_string_elements(*f->find("a.u8")).size(), 0u);
    EXPECT_EQ(f->find("a.u16")->nbytes, 4u);
    EXPECT_EQ(f->find("a.f64")->elem_type, GgufType::FLOAT64);
}

TEST(GgufRoundTrip, a_bool_array_like_gemma4_sliding_window_pattern_reads_back) {
    // llama.cpp's converter writes the per-layer pattern as an ARRAY of BOOL (true = SWA).
    std::vector<bool> pattern(35);
    for (size_t il = 0; il < pattern.size(); ++il) pattern[il] = il % 5 != 4;
    GgufWriter w;
    w.add_array("gemma4.attention.sliding_window_pattern", pattern);
    w.add_array("empty", std::vector<bool>{});
    auto f = round_trip(w);
    ASSERT_TRUE(f);
    EXPECT_EQ(*f->get_bool_array("gemma4.attention.sliding_window_pattern"), pattern);
    EXPECT_TRUE(f->get_bool_array("empty")->empty());
    // Bools are not integers to GgufFile: callers that accept both ask for both (as the
    // plugin API's meta_get_int_array does).
    EXPECT_TRUE(fails_with(f->get_int_array("empty"), {"expected ARRAY of integers", "found ARRAY of BOOL"}));
}

TEST(GgufRoundTrip, getters_name_file_key_expected_and_found_types) {
    GgufWriter w;
    w.add_string("name", "x");
    w.add_i32("neg", -3);
    w.add_u64("huge", std::numeric_limits<uint64_t>::max());
    w.add_u32("n", 7);
    w.add_array("ids", std::vector<int32_t>{1, 2});
    w.add_array("big", std::vector<uint64_t>{1, std::numeric_limits<uint64_t>::max()});
    w.add_array("names", std::vector<std::string>{"a"});
    auto f = round_trip(w);
    ASSERT_TRUE(f);

    EXPECT_TRUE(fails_with(f->get_uint("name"), {"mem.gguf", "key 'name'", "expected an integer", "found STRING"}));
    EXPECT_TRUE(fails_with(f->get_string("n"), {"mem.gguf", "key 'n'", "expected STRING", "found UINT32"}));
    EXPECT_TRUE(fails_with(f->get_float("n"), {"expected FLOAT32 or FLOAT64", "found UINT32"}));
    EXPECT_TRUE(fails_with(f->get_bool("n"), {"expected BOOL", "found UINT32"}));
    EXPECT_TRUE(fails_with(f->get_uint("ids"), {"key 'ids'", "found ARRAY of INT32"}));
    EXPECT_TRUE(fails_with(f->get_string_array("ids"), {"expected ARRAY of STRING", "found ARRAY of INT32"}));
    EXPECT_TRUE(fails_with(f->get_int_array("names"), {"expected ARRAY of integers", "ARRAY of STRING"}));
    EXPECT_TRUE(fails_with(f->get_float_array("ids"), {"ARRAY of FLOAT32 or FLOAT64", "ARRAY of INT32"}));
    EXPECT_TRUE(fails_with(f->get_int_array("n"), {"found UINT32"}));
    EXPECT_TRUE(fails_with(f->get_uint("missing"), {"mem.gguf", "key 'missing' not found"}));
    EXPECT_TRUE(fails_with(f->get_uint("neg"), {"key 'neg'", "-3", "negative"}));
    EXPECT_TRUE(fails_with(f->get_int("huge"), {"key 'huge'", "does not fit in int64"}));
    EXPECT_TRUE(fails_with(f->get_int_array("big"), {"key 'big'", "element 1", "does not fit"}));
    EXPECT_TRUE(fails_with(f->get_bool_array("ids"), {"key 'ids'", "expected ARRAY of BOOL", "found ARRAY of INT32"}));
    EXPECT_TRUE(fails_with(f->get_bool_array("n"), {"expected ARRAY of BOOL", "found UINT32"}));
    EXPECT_TRUE(fails_with(f->get_bool_array("missing"), {"key 'missing' not found", "ARRAY of BOOL"}));
    EXPECT_EQ(*f->get_int("neg"), -3);

    // Defaults apply only to absent keys; a present key of the wrong type is an error.
    EXPECT_EQ(*f->get_uint_or("missing", 42), 42u);
    EXPECT_EQ(*f->get_int_or("missing", -1), -1);
    EXPECT_EQ(*f->get_float_or("missing", 0.5), 0.5);
    EXPECT_EQ(*f->get_bool_or("missing", true), true);
    EXPECT_EQ(*f->get_string_or("missing", "d"), "d");
    EXPECT_EQ(*f->get_uint_or("n", 42), 7u);
    EXPECT_EQ(*f->get_string_or("name", "d"), "x");
    EXPECT_EQ(*f->get_int_or("neg", 0), -3);
    EXPECT_TRUE(fails_with(f->get_uint_or("name", 1), "found STRING"));
    EXPECT_TRUE(fails_with(f->get_float_or("name", 1.0), "found STRING"));
    EXPECT_TRUE(fails_with(f->get_bool_or("name", false), "found STRING"));
    EXPECT_TRUE(fails_with(f->get_int_or("name", 0), "found STRING"));
    EXPECT_TRUE(fails_with(f->get_string_or("n", ""), "found UINT32"));
    EXPECT_EQ(f->find("missing"), nullptr);
}

TEST(GgufRoundTrip, tensors_of_several_types_and_alignments_keep_shape_type_and_bytes) {
    struct Case {
        const char* name;
        uint32_t type;
        std::vector<int64_t> ne;
    };
    const std::vector<Case> cases = {
        {"f32", 0, {3}},          {"f16", 1, {5, 3}},           {"q4_0", 2, {64, 2}},
        {"q8_0", 8, {32, 3, 2}},  {"q4_k", 12, {256, 1, 1, 2}}, {"iq2_xxs", 16, {512}},
        {"bf16", 30, {7, 1}},     {"i32", 26, {1, 1, 1, 1}},    {"empty", 0, {0, 4}},
    };
    for (uint32_t alignment : {1u, 8u, 32u, 64u, 4096u}) {
        SCOPED_TRACE(alignment);
        GgufWriter w;
        w.add_string("general.architecture", "test");
        if (alignment != 32) w.set_alignment(alignment);
        std::vector<std::vector<uint8_t>> datas;
        for (size_t i = 0; i < cases.size(); ++i) {
            uint64_t n = *ggml_tensor_nbytes(cases[i].type, cases[i].ne.data(), int(cases[i].ne.size()));
            datas.push_back(pattern(size_t(n), uint8_t(i)));
            ASSERT_TRUE(w.add_tensor(cases[i].name, cases[i].type, cases[i].ne, datas.back().data(),
                                     datas.back().size()).ok());
        }
        auto f = round_trip(w);
        ASSERT_TRUE(f);
        EXPECT_EQ(f->alignment(), alignment);
        EXPECT_EQ(f->data_offset() % alignment, 0u);
        ASSERT_EQ(f->tensors().size(), cases.size());
        for (size_t i = 0; i < cases.size(); ++i) {
            const GgufTensorInfo* t = f->find_tensor(cases[i].name);
            ASSERT_TRUE(t) << cases[i].name;
            EXPECT_EQ(t, &f->tensors()[i]);
            EXPECT_EQ(t->type, cases[i].type);
            EXPECT_EQ(t->n_dims, cases[i].ne.size());
            for (size_t d = 0; d < 4; ++d)
                EXPECT_EQ(t->ne[d], d < cases[i].ne.size() ? cases[i].ne[d] : 1);
            EXPECT_EQ(t->offset % alignment, 0u);
            EXPECT_EQ(t->file_offset, f->data_offset() + t->offset);
            ASSERT_EQ(t->nbytes, datas[i].size());
            EXPECT_TRUE(std::equal(datas[i].begin(), datas[i].end(), f->tensor_data(*t))) << cases[i].name;
        }
        EXPECT_EQ(f->find_tensor("nope"), nullptr);
    }
}

TEST(GgufRoundTrip, writer_reproduces_the_spec_byte_dump_exactly) {
    // docs/formats/gguf.md A.8: 2 KVs and one F32 tensor "w", ne = (4, 2), values 0..7.
    GgufWriter w;
    w.add_string("general.architecture", "llama");
    w.add_u32("llama.block_count", 1);
    float values[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    ASSERT_TRUE(w.add_tensor("w", 0, {4, 2}, values, sizeof(values)).ok());
    auto bytes = w.to_bytes();
    ASSERT_TRUE(bytes.ok());

    std::string want;
    auto u32 = [&](uint32_t v) { want.append(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](uint64_t v) { want.append(reinterpret_cast<const char*>(&v), 8); };
    want += "GGUF";
    u32(3); u64(1); u64(2);                                      // 0x00
    u64(20); want += "general.architecture"; u32(8);             // 0x18
    u64(5); want += "llama";                                     // 0x38
    u64(17); want += "llama.block_count"; u32(4); u32(1);        // 0x45
    ASSERT_EQ(want.size(), 0x66u);
    u64(1); want += "w"; u32(2); u64(4); u64(2); u32(0); u64(0); // 0x66
    ASSERT_EQ(want.size(), 0x8fu);
    want.append(17, '\0');                                       // padding to 0xa0
    want.append(reinterpret_cast<const char*>(values), sizeof(values));
    ASSERT_EQ(want.size(), 0xa0u + 32);
    EXPECT_EQ(*bytes, want);

    auto f = GgufFile::from_memory("a8.gguf", *bytes);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ((*f)->data_offset(), 0xa0u);
}

TEST(GgufRoundTrip, write_file_streams_the_same_bytes_as_to_bytes) {
    GgufWriter w;
    w.add_string("general.architecture", "big");
    w.set_alignment(64);
    // Owned data (no copy) of a few MB, plus a tensor whose size needs padding.
    ASSERT_TRUE(w.add_tensor("a", 0, {1024, 1024}, pattern(4u << 20, 1)).ok());
    ASSERT_TRUE(w.add_tensor("b", 1, {3}, pattern(6, 2)).ok());
    ASSERT_TRUE(w.add_tensor("c", 24, {5}, pattern(5, 3)).ok());
    std::string path = tdm::test::make_temp_dir("gguf-writer") + "/m.gguf";
    ASSERT_TRUE(w.write_file(path).ok());
    std::string on_disk = tdm::test::read_file(path);
    auto bytes = w.to_bytes();
    ASSERT_TRUE(bytes.ok());
    EXPECT_EQ(on_disk.size(), bytes->size());
    EXPECT_TRUE(on_disk == *bytes);
    EXPECT_EQ(on_disk.size() % 64, 0u);  // every tensor, the last included, is padded

    auto f = GgufFile::open(path);
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_EQ((*f)->path(), path);
    EXPECT_EQ((*f)->alignment(), 64u);
    EXPECT_EQ(*(*f)->get_uint("general.alignment"), 64u);
    const GgufTensorInfo* c = (*f)->find_tensor("c");
    ASSERT_TRUE(c);
    EXPECT_EQ(std::memcmp((*f)->tensor_data(*c), pattern(5, 3).data(), 5), 0);
    (*f)->release_pages(*(*f)->find_tensor("a"));  // data stays readable afterwards
    EXPECT_EQ((*f)->tensor_data(*(*f)->find_tensor("a"))[4095], pattern(4u << 20, 1)[4095]);
}

TEST(GgufRoundTrip, writer_refuses_inconsistent_tensors_and_keys) {
    GgufWriter w;
    std::vector<uint8_t> d(64);
    EXPECT_TRUE(fails_with(w.add_tensor("t", 0, {4}, d.data(), 12), {"'t'", "12 bytes given", "need 16"}));
    EXPECT_TRUE(fails_with(w.add_tensor("t", 4, {4}, d.data(), 16), "unknown ggml type id 4"));
    EXPECT_TRUE(fails_with(w.add_tensor("t", 12, {100}, d.data(), 16), "not a multiple of the q4_K block size 256"));
    EXPECT_TRUE(fails_with(w.add_tensor("t", 0, {1, 1, 1, 1, 1}, d.data(), 4), "5 dimensions"));
    EXPECT_TRUE(fails_with(w.add_tensor("t", 0, {}, d.data(), 4), "0 dimensions"));
    EXPECT_TRUE(fails_with(w.add_tensor("t", 0, {-1}, d.data(), 0), "negative"));
    EXPECT_TRUE(fails_with(w.add_tensor(std::string(64, 'n'), 0, {1}, d.data(), 4), "64 bytes"));
    EXPECT_TRUE(fails_with(w.add_tensor("", 0, {1}, d.data(), 4), "0 bytes"));
    ASSERT_TRUE(w.add_tensor(std::string(63, 'n'), 0, {1}, d.data(), 4).ok());
    ASSERT_TRUE(w.add_tensor("t", 0, {1}, d.data(), 4).ok());
    EXPECT_TRUE(fails_with(w.add_tensor("t", 0, {1}, d.data(), 4), "duplicate tensor name 't'"));
    EXPECT_TRUE(w.status().ok());  // tensor errors are returned, not recorded

    GgufWriter dup;
    dup.add_u32("k", 1);
    dup.add_string("k", "again");
    EXPECT_TRUE(fails_with(dup.to_bytes(), "duplicate key 'k'"));
    EXPECT_TRUE(fails_with(dup.write_file(tdm::test::make_temp_dir("gguf-dup") + "/x.gguf"), "duplicate key"));

    GgufWriter empty_key;
    empty_key.add_bool("", true);
    EXPECT_TRUE(fails_with(empty_key.status(), "empty metadata key"));

    GgufWriter bad_align;
    bad_align.set_alignment(48);
    EXPECT_TRUE(fails_with(bad_align.to_bytes(), "alignment 48 is not a power of two"));

    // general.alignment through add_u32 is the same as set_alignment; setting it twice
    // keeps one key.
    GgufWriter a;
    a.add_u32("general.alignment", 16);
    a.set_alignment(128);
    EXPECT_EQ(a.alignment(), 128u);
    auto f = round_trip(a);
    ASSERT_TRUE(f);
    EXPECT_EQ(f->kvs().size(), 1u);
    EXPECT_EQ(f->alignment(), 128u);

    EXPECT_TRUE(fails_with(GgufWriter().write_file("/nonexistent-dir/x.gguf"), "/nonexistent-dir/x.gguf"));
}

TEST(GgufRoundTrip, type_table_covers_every_ggml_id_in_the_spec) {
    // docs/formats/gguf.md A.6: removed ids have no size; every other id up to 42 has one.
    for (uint32_t id : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 43u, 1000u}) EXPECT_EQ(ggml_type_size(id), nullptr) << id;
    struct Want {
        uint32_t id, block, bytes;
    };
    for (Want w : {Want{0, 1, 4}, Want{2, 32, 18}, Want{10, 256, 84}, Want{15, 256, 292},
                   Want{16, 256, 66}, Want{19, 256, 50}, Want{23, 256, 136}, Want{27, 1, 8},
                   Want{29, 256, 56}, Want{30, 1, 2}, Want{34, 256, 54}, Want{39, 32, 17},
                   Want{40, 64, 36}, Want{41, 128, 18}, Want{42, 64, 18}}) {
        const GgmlTypeSize* s = ggml_type_size(w.id);
        ASSERT_TRUE(s) << w.id;
        EXPECT_EQ(s->block_size, w.block) << w.id;
        EXPECT_EQ(s->block_bytes, w.bytes) << w.id;
    }
    int known = 0;
    for (uint32_t id = 0; id < 43; ++id) known += ggml_type_size(id) != nullptr;
    EXPECT_EQ(known, 43 - 8);
}
