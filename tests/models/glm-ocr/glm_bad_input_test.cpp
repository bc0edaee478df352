// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_bad_input_test.cpp: GLM-OCR files with one inconsistent hyper-parameter
// (copies of a synthetic GGUF with one key changed) are refused when the model is created,
// each with a message that names the problem, instead of failing at the first graph or
// generating from a misread shape.
#include "glm_helpers.h"

#include "formats/gguf.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

// A copy of `src` in which `key` is replaced by what `set` adds.
std::string copy_with(const std::string& src, const std::string& key, const std::function<void(GgufWriter&)>& set) {
    auto f = GgufFile::open(src);
    EXPECT_TRUE(f.ok());
    if (!f.ok()) return "";
    GgufWriter w;
    for (const GgufKV& kv : (*f)->kvs())
        if (kv.key != key) w.add_value(kv.key, kv.value);
    set(w);
    for (const GgufTensorInfo& ti : (*f)->tensors())
        EXPECT_TRUE(w.add_tensor(ti.name, ti.type, std::vector<int64_t>(ti.ne, ti.ne + ti.n_dims), (*f)->tensor_data(ti),
                                 ti.nbytes)
                        .ok());
    const std::string out = test::make_temp_dir("glmbad") + "/bad.gguf";
    EXPECT_TRUE(w.write_file(out).ok());
    return out;
}

struct BadCase {
    const char* name;
    const char* key;
    std::function<void(GgufWriter&)> set;
    const char* message;  // a part of the expected error
};

TEST(GlmBadInput, inconsistent_hyper_parameters_are_refused_by_name) {
    const std::string good = testglm::synth({DType::F32, false});
    const std::vector<BadCase> cases = {
        {"a 4th M-RoPE section", "glm4.rope.dimension_sections",
         [](GgufWriter& w) { w.add_array("glm4.rope.dimension_sections", std::vector<int32_t>{4, 6, 4, 2}); },
         "has a 4th section"},
        {"sections beyond the rotated dims", "glm4.rope.dimension_sections",
         [](GgufWriter& w) { w.add_array("glm4.rope.dimension_sections", std::vector<int32_t>{8, 6, 6, 0}); },
         "M-RoPE sections [8, 6, 6] cover 20 frequency slots"},
        {"value_length unlike key_length", "glm4.attention.value_length",
         [](GgufWriter& w) { w.add_u32("glm4.attention.value_length", 16); }, "value_length 16 differs"},
        {"no trunk left", "glm4.nextn_predict_layers", [](GgufWriter& w) { w.add_u32("glm4.nextn_predict_layers", 3); },
         "leave no trunk"},
        {"a zero norm epsilon", "glm4.attention.layer_norm_rms_epsilon",
         [](GgufWriter& w) { w.add_f32("glm4.attention.layer_norm_rms_epsilon", 0.0f); }, "layer_norm_rms_epsilon"},
        {"rope scaling", "glm4.rope.scaling.type", [](GgufWriter& w) { w.add_string("glm4.rope.scaling.type", "yarn"); },
         "rope.scaling.type 'yarn' is not supported"},
        {"no rotated dims given", "glm4.rope.dimension_count", [](GgufWriter&) {}, "rope.dimension_count"},
    };
    for (const BadCase& c : cases) {
        const std::string path = copy_with(good, c.key, c.set);
        auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
        ASSERT_FALSE(m.ok()) << c.name;
        EXPECT_NE(m.error().message().find(c.message), std::string::npos) << c.name << ": " << m.error().message();
    }
}

// 32 query heads over one KV head: more than the attention op takes; refused at create.
TEST(GlmBadInput, more_query_heads_per_kv_head_than_attention_takes_is_refused) {
    const std::string good = testglm::synth({DType::F32, false});
    const std::string path = copy_with(good, "glm4.attention.head_count",
                                       [](GgufWriter& w) { w.add_u32("glm4.attention.head_count", 32); });
    const std::string both = copy_with(path, "glm4.attention.head_count_kv",
                                       [](GgufWriter& w) { w.add_u32("glm4.attention.head_count_kv", 1); });
    auto m = Model::load(both, test::build_tree_plugins(), test::test_device());
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.error().message().find("32 query heads per KV head"), std::string::npos) << m.error().message();
}

}  // namespace
}  // namespace tdm
