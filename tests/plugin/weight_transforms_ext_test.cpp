// SPDX-License-Identifier: Apache-2.0
// tests/plugin/weight_transforms_ext_test.cpp: extension tdm.weight_transforms as a plugin
// calls it. A vector loaded through it holds, read back from the device, what a plain loop
// computes from the stored values: v[i] + i (ADD_INDEX; HF d2t offsets become target ids), and
// as the table F32 [4, n] of rows (v[i], 0, 0, 0) that get_rows reads by index (ELEMENT_ROWS),
// for integer and float sources; a sum f32 cannot hold exactly, a request that is not a plain
// vector, and a transform bit the host does not know are refused with messages that say why.
// TANDEM_HIDE_EXTENSIONS hides it like any extension (the plugin's fallback: the EAGLE-3 tests).
#include <gtest/gtest.h>

#include <cstring>

#include "formats/model_source.h"
#include "plugin/handles.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

class WeightTransforms : public test::DeviceTest {};

const tdm_host_api& host_wt() { return *host_api(); }
std::string last_error_wt() { return host_wt().last_error(); }

const tdm_ext_weight_transforms* extension_wt() {
    uint32_t version = 0;
    auto ext = static_cast<const tdm_ext_weight_transforms*>(
        host_wt().get_extension(TDM_EXT_WEIGHT_TRANSFORMS, 1, &version));
    EXPECT_EQ(version, TDM_EXT_WEIGHT_TRANSFORMS_VERSION);
    return ext;
}

// HF's d2t holds target - j as int64; GGUF's the target ids; "scale" a float vector.
const std::vector<int64_t> kOffsets = {5, 5, 7, 0, 96, 100, 3, -2};
const std::vector<int32_t> kIds = {2, 300, 17, 5, 90, 44, 81, 3};
const std::vector<float> kFloats = {0.5f, -1.25f, 3.0f, 1e-3f};

std::unique_ptr<ModelSource> write_vectors(const std::vector<int64_t>& offsets) {
    GgufWriter w;
    w.add_string("general.architecture", "test");
    EXPECT_TRUE(w.add_tensor("d2t_offsets", TDM_DTYPE_I64, {int64_t(offsets.size())}, offsets.data(),
                             offsets.size() * 8)
                    .ok());
    EXPECT_TRUE(w.add_tensor("d2t_ids", TDM_DTYPE_I32, {int64_t(kIds.size())}, kIds.data(), kIds.size() * 4).ok());
    EXPECT_TRUE(w.add_tensor("scale", TDM_DTYPE_F32, {int64_t(kFloats.size())}, kFloats.data(), kFloats.size() * 4)
                    .ok());
    const float matrix[8] = {};
    EXPECT_TRUE(w.add_tensor("matrix", TDM_DTYPE_F32, {4, 2}, matrix, sizeof matrix).ok());
    const std::string path = test::make_temp_dir("weight-transforms") + "/v.gguf";
    EXPECT_TRUE(w.write_file(path).ok());
    auto src = ModelSource::open(path);
    EXPECT_TRUE(src.ok()) << src.error().message();
    return src.ok() ? std::move(src).value() : nullptr;
}

tdm_weight_request vector_request(const char* name, int64_t n) {
    tdm_weight_request r{};
    r.struct_size = sizeof r;
    r.name = name;
    r.n_dims = 1;
    r.ne[0] = n;
    r.flags = TDM_WEIGHT_F32;
    return r;
}

// The weight's f32 values as the device holds them, with its shape.
std::vector<float> read_back(vk::Device& device, const tdm_weight* w, int64_t* ne0, int64_t* ne1) {
    const DeviceWeight* d = from_handle(w);
    EXPECT_EQ(d->type(), DType::F32);
    EXPECT_EQ(d->chunks().size(), 1u);
    *ne0 = d->ne()[0];
    *ne1 = d->ne()[1];
    std::vector<float> v(size_t(*ne0 * *ne1));
    EXPECT_TRUE(read_device(device, d->chunks()[0].main, v.data(), v.size() * sizeof(float)).ok());
    return v;
}

// The plain reference: v[i] (+ i), one value per element or one row of 4 per element.
std::vector<float> reference(const std::vector<float>& stored, bool add_index, bool element_rows) {
    std::vector<float> out;
    for (size_t i = 0; i < stored.size(); ++i) {
        const float v = add_index ? stored[i] + float(i) : stored[i];
        out.push_back(v);
        if (element_rows) out.insert(out.end(), {0.0f, 0.0f, 0.0f});
    }
    return out;
}

TEST_F(WeightTransforms, vectors_hold_what_a_plain_loop_computes_from_the_stored_values) {
    auto src = write_vectors(kOffsets);
    ASSERT_TRUE(src);
    const tdm_ext_weight_transforms* ext = extension_wt();
    ASSERT_NE(ext, nullptr) << last_error_wt();
    EXPECT_EQ(ext->struct_size, sizeof(tdm_ext_weight_transforms));
    WeightStore store(device(), "test");
    tdm_loader loader{&store, src.get()};
    struct Source {
        const char* name;
        std::vector<float> stored;
    };
    const Source sources[] = {{"d2t_offsets", std::vector<float>(kOffsets.begin(), kOffsets.end())},
                              {"d2t_ids", std::vector<float>(kIds.begin(), kIds.end())},
                              {"scale", kFloats}};
    for (const Source& s : sources) {
        for (uint32_t transforms = 0; transforms < 4; ++transforms) {
            const bool add_index = transforms & TDM_WEIGHT_TRANSFORM_ADD_INDEX;
            const bool element_rows = transforms & TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS;
            const int64_t n = int64_t(s.stored.size());
            tdm_weight_request req = vector_request(s.name, n);
            if (transforms == 3) req.flags = 0;  // f32 is implied
            const tdm_weight* w = nullptr;
            ASSERT_EQ(ext->load(&loader, &req, transforms, &w), TDM_OK) << s.name << ": " << last_error_wt();
            int64_t ne0 = 0, ne1 = 0;
            const std::vector<float> got = read_back(device(), w, &ne0, &ne1);
            EXPECT_EQ(ne0, element_rows ? 4 : n) << s.name << ", transforms " << transforms;
            EXPECT_EQ(ne1, element_rows ? n : 1) << s.name << ", transforms " << transforms;
            EXPECT_EQ(got, reference(s.stored, add_index, element_rows)) << s.name << ", transforms " << transforms;
        }
    }
    // HF's offsets plus their index are the target ids GGUF stores: the two forms meet
    const std::vector<int64_t> offsets = {2 - 0, 300 - 1, 17 - 2, 5 - 3, 90 - 4, 44 - 5, 81 - 6, 3 - 7};
    auto hf = write_vectors(offsets);
    ASSERT_TRUE(hf);
    tdm_loader hf_loader{&store, hf.get()};
    const tdm_weight_request from_hf = vector_request("d2t_offsets", 8), from_gguf = vector_request("d2t_ids", 8);
    const tdm_weight *a = nullptr, *b = nullptr;
    ASSERT_EQ(ext->load(&hf_loader, &from_hf, TDM_WEIGHT_TRANSFORM_ADD_INDEX | TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS, &a),
              TDM_OK)
        << last_error_wt();
    ASSERT_EQ(ext->load(&hf_loader, &from_gguf, TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS, &b), TDM_OK) << last_error_wt();
    int64_t ne0 = 0, ne1 = 0;
    EXPECT_EQ(read_back(device(), a, &ne0, &ne1), read_back(device(), b, &ne0, &ne1));
}

TEST_F(WeightTransforms, what_it_cannot_honour_is_refused_naming_the_tensor) {
    // 16777000 at element 300 of a vector: with its index, 16777300 > 2^24
    std::vector<int64_t> big(301, 0);
    big[300] = 16777000;
    auto src = write_vectors(big);
    ASSERT_TRUE(src);
    const tdm_ext_weight_transforms* ext = extension_wt();
    ASSERT_NE(ext, nullptr);
    WeightStore store(device(), "test");
    tdm_loader loader{&store, src.get()};
    const tdm_weight* w = nullptr;
    tdm_weight_request req = vector_request("d2t_offsets", 301);
    EXPECT_EQ(ext->load(&loader, &req, TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS, &w), TDM_OK) << "exact without the index";
    EXPECT_EQ(ext->load(&loader, &req, TDM_WEIGHT_TRANSFORM_ADD_INDEX, &w), TDM_ERR_BAD_MODEL);
    EXPECT_NE(last_error_wt().find("integer tensor 'd2t_offsets' holds 16777000 at element 300; with its index added, "
                                   "16777300 is more than f32 can hold exactly"),
              std::string::npos)
        << last_error_wt();

    EXPECT_EQ(ext->load(&loader, &req, 1u << 2, &w), TDM_ERR_UNSUPPORTED);
    EXPECT_NE(last_error_wt().find("'d2t_offsets': transform bits 0x4 are unknown to this host"), std::string::npos)
        << last_error_wt();
    tdm_weight_request matrix = vector_request("matrix", 4);
    matrix.n_dims = 2;
    matrix.ne[1] = 2;
    tdm_weight_request one_minus = vector_request("scale", 4);
    one_minus.flags |= TDM_WEIGHT_ADD_ONE;
    const int64_t perm[4] = {3, 2, 1, 0};
    tdm_weight_request permuted = vector_request("scale", 4);
    permuted.row_perm = perm;
    permuted.n_row_perm = 1;
    for (const tdm_weight_request* r : {&matrix, &one_minus, &permuted}) {
        EXPECT_EQ(ext->load(&loader, r, TDM_WEIGHT_TRANSFORM_ADD_INDEX, &w), TDM_ERR_INVALID_ARGUMENT) << r->name;
        EXPECT_NE(last_error_wt().find("the request must be a vector (n_dims 1) without parts, slab, permutations"),
                  std::string::npos)
            << last_error_wt();
    }
    tdm_weight_request wrong = vector_request("scale", 5);
    EXPECT_EQ(ext->load(&loader, &wrong, 0, &w), TDM_ERR_SHAPE);
    EXPECT_NE(last_error_wt().find("tensor 'scale' has shape [4], expected [5]"), std::string::npos) << last_error_wt();
    tdm_weight_request absent = vector_request("d2t", 4);
    EXPECT_EQ(ext->load(&loader, &absent, 0, &w), TDM_ERR_NOT_FOUND);
    EXPECT_NE(last_error_wt().find("missing tensor 'd2t'"), std::string::npos) << last_error_wt();
    absent.flags |= TDM_WEIGHT_OPTIONAL;
    w = reinterpret_cast<const tdm_weight*>(&store);
    EXPECT_EQ(ext->load(&loader, &absent, TDM_WEIGHT_TRANSFORM_ADD_INDEX, &w), TDM_OK);
    EXPECT_EQ(w, nullptr);
    EXPECT_EQ(ext->load(&loader, nullptr, 0, &w), TDM_ERR_INVALID_ARGUMENT);
}

TEST(WeightTransformsHidden, TANDEM_HIDE_EXTENSIONS_answers_as_a_host_without_it) {
    const test::ScopedEnv hide("TANDEM_HIDE_EXTENSIONS", TDM_EXT_WEIGHT_TRANSFORMS);
    EXPECT_EQ(host_wt().get_extension(TDM_EXT_WEIGHT_TRANSFORMS, 1, nullptr), nullptr);
    EXPECT_NE(last_error_wt().find("'tdm.weight_transforms' is hidden by TANDEM_HIDE_EXTENSIONS"), std::string::npos)
        << last_error_wt();
}

}  // namespace
}  // namespace tdm
