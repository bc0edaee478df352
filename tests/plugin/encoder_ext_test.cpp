// SPDX-License-Identifier: Apache-2.0
// tests/plugin/encoder_ext_test.cpp: extension tdm.encoder and TDM_WEIGHT_FLATTEN as a plugin
// meets them. Encoders register only with a whole descriptor and a target; an encoder graph's
// inputs exist only in an encoder graph and have the batch's shapes; its rows must be [n_embd,
// n_rows]; inject_rows is a no-op in a text batch and x * keep + rows in a batch with image rows,
// and refused in an encoder graph; load_f32 makes a weight of given values. FLATTEN reads a 4-D
// kernel as a row-major matrix and refuses shapes that do not flatten.
// (Encoders end to end: tests/models/glm-ocr/glm_image_test.cpp.)
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "formats/model_source.h"
#include "plugin/handles.h"
#include "plugin/registry.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

class EncoderExt : public test::DeviceTest {};

const tdm_host_api& host_encoder_ext() { return *host_api(); }
std::string last_error_encoder_ext() { return host_encoder_ext().last_error(); }

const tdm_ext_encoder* extension() {
    uint32_t version = 0;
    auto ext = static_cast<const tdm_ext_encoder*>(host_encoder_ext().get_extension(TDM_EXT_ENCODER, 1, &version));
    EXPECT_EQ(version, TDM_EXT_ENCODER_VERSION);
    return ext;
}

tdm_status no_create(const tdm_host_api*, const tdm_model_source*, void*, const tdm_options*, tdm_encoder_info*,
                     void**, char*, size_t) {
    return TDM_ERR_UNSUPPORTED;
}
tdm_status no_load(void*, tdm_loader*, char*, size_t) { return TDM_OK; }
tdm_status no_graph(void*, tdm_graph*, const tdm_encoder_batch*, char*, size_t) { return TDM_OK; }
tdm_status no_positions(void*, const tdm_encoder_batch*, int32_t*, int32_t*, char*, size_t) { return TDM_OK; }
void no_destroy(void*) {}

TEST_F(EncoderExt, registration_needs_a_whole_descriptor_and_a_target_and_lookups_find_it_by_target) {
    const tdm_ext_encoder* ext = extension();
    ASSERT_NE(ext, nullptr);
    Registry reg;
    auto rec = std::make_unique<PluginRecord>();
    rec->name = "vision-test";
    rec->abi = 3;
    PluginRecord* p = reg.add_plugin(std::move(rec));
    tdm_registry r{&reg, p};
    static const char* const kTargets[] = {"glm4", nullptr};
    tdm_encoder_desc d{};
    d.struct_size = sizeof d;
    d.name = "test-vision";
    d.target_archs = kTargets;
    d.create = no_create;
    d.load = no_load;
    d.build_graph = no_graph;
    d.destroy = no_destroy;
    EXPECT_EQ(ext->register_encoder(&r, &d), TDM_ERR_INVALID_ARGUMENT);  // no positions callback
    EXPECT_NE(last_error_encoder_ext().find("incomplete encoder descriptor"), std::string::npos) << last_error_encoder_ext();
    d.positions = no_positions;
    d.target_archs = nullptr;
    EXPECT_NE(ext->register_encoder(&r, &d), TDM_OK);
    EXPECT_NE(last_error_encoder_ext().find("names no target architecture"), std::string::npos) << last_error_encoder_ext();
    d.target_archs = kTargets;
    tdm_encoder_desc short_desc = d;
    short_desc.struct_size = 16;
    EXPECT_EQ(ext->register_encoder(&r, &short_desc), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(ext->register_encoder(nullptr, &d), TDM_ERR_INVALID_ARGUMENT);  // outside init
    ASSERT_EQ(ext->register_encoder(&r, &d), TDM_OK) << last_error_encoder_ext();
    const EncoderEntry* e = reg.find_encoder("glm4");
    ASSERT_NE(e, nullptr);
    EXPECT_STREQ(e->desc->name, "test-vision");
    EXPECT_EQ(reg.find_encoder("qwen3"), nullptr);
    EXPECT_EQ(p->provides.back(), "encoder test-vision");
}

TEST_F(EncoderExt, encoder_graph_inputs_and_rows_have_the_batch_shapes_and_exist_only_there) {
    const tdm_ext_encoder* ext = extension();
    ASSERT_NE(ext, nullptr);
    tdm_graph text;  // a target's graph
    text.batch.n_tokens = 4;
    tdm_tensor t{};
    EXPECT_EQ(ext->graph_patches(&text, &t), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_encoder_ext().find("only inside an encoder's build_graph"), std::string::npos) << last_error_encoder_ext();
    EXPECT_EQ(ext->graph_set_rows(&text, t), TDM_ERR_INVALID_ARGUMENT);

    tdm_graph g;
    g.is_encoder = true;
    g.encoder_batch = {sizeof(tdm_encoder_batch), 8, 2, 1, 2, 4};
    g.patch_values = 12;
    g.encoder_width = 16;
    tdm_tensor patches{}, pos{}, ranges{};
    ASSERT_EQ(ext->graph_patches(&g, &patches), TDM_OK);
    ASSERT_EQ(ext->graph_patch_positions(&g, &pos), TDM_OK);
    ASSERT_EQ(ext->graph_patch_ranges(&g, &ranges), TDM_OK);
    EXPECT_EQ(g.graph.tensor(patches.id).ne[0], 12);
    EXPECT_EQ(g.graph.tensor(patches.id).ne[1], 8);
    EXPECT_EQ(g.graph.tensor(pos.id).ne[0], 4);
    EXPECT_EQ(g.graph.tensor(ranges.id).ne[0], 2);
    EXPECT_EQ(g.graph.tensor(ranges.id).type, DType::I32);
    tdm_tensor again{};
    ASSERT_EQ(ext->graph_patches(&g, &again), TDM_OK);
    EXPECT_EQ(again.id, patches.id) << "one input, however often asked for";
    EXPECT_EQ(ext->graph_set_rows(&g, patches), TDM_ERR_SHAPE);  // [12, 8], not [16, 2]
    EXPECT_NE(last_error_encoder_ext().find("expected F32 [16, 2]"), std::string::npos) << last_error_encoder_ext();
    EXPECT_EQ(ext->inject_rows(&g, patches, &t), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_encoder_ext().find("only in a target model's graph"), std::string::npos) << last_error_encoder_ext();
}

TEST_F(EncoderExt, inject_rows_is_nothing_in_a_text_batch_and_keeps_or_replaces_rows_in_an_image_batch) {
    const tdm_ext_encoder* ext = extension();
    ASSERT_NE(ext, nullptr);
    for (bool image : {false, true}) {
        tdm_graph g;
        g.batch.n_tokens = 3;
        g.image_rows = image;
        const TensorId x = g.graph.input(DType::F32, {8, 3}, "x");
        tdm_tensor out{};
        ASSERT_EQ(ext->inject_rows(&g, tdm_tensor{x}, &out), TDM_OK) << last_error_encoder_ext();
        if (!image) {
            EXPECT_EQ(out.id, x);
            EXPECT_EQ(g.inject_rows, kNoTensor);
            continue;
        }
        EXPECT_NE(out.id, x);
        ASSERT_NE(g.inject_rows, kNoTensor);
        EXPECT_EQ(g.graph.tensor(g.inject_rows).ne[0], 8);
        EXPECT_EQ(g.graph.tensor(g.inject_keep).ne[0], 1);
        EXPECT_EQ(g.graph.tensor(g.inject_keep).ne[1], 3);
        const TensorId wrong = g.graph.input(DType::F32, {8, 5}, "wrong");
        EXPECT_EQ(ext->inject_rows(&g, tdm_tensor{wrong}, &out), TDM_ERR_SHAPE);
    }
}

TEST_F(EncoderExt, load_f32_and_flatten_make_the_weights_asked_for) {
    const tdm_ext_encoder* ext = extension();
    ASSERT_NE(ext, nullptr);
    // a Conv2d kernel [out 3][in 2][2][2] as GGUF stores it: ne [2, 2, 2, 3]
    std::vector<float> kernel(24);
    for (size_t i = 0; i < kernel.size(); ++i) kernel[i] = float(i) * 0.5f;
    GgufWriter w;
    w.add_string("general.architecture", "test");
    ASSERT_TRUE(w.add_tensor("conv", TDM_DTYPE_F32, {2, 2, 2, 3}, kernel.data(), kernel.size() * 4).ok());
    const std::string path = test::make_temp_dir("flatten") + "/k.gguf";
    ASSERT_TRUE(w.write_file(path).ok());
    auto src = ModelSource::open(path);
    ASSERT_TRUE(src.ok());
    WeightStore store(device(), "test");
    tdm_loader loader{&store, src->get()};

    tdm_weight_request r{};
    r.struct_size = sizeof r;
    r.name = "conv";
    r.n_dims = 2;
    r.ne[0] = 8;
    r.ne[1] = 3;
    const tdm_weight* flat = nullptr;
    EXPECT_EQ(host_encoder_ext().load_weight(&loader, &r, &flat), TDM_ERR_SHAPE) << "without the flag the shape is 4-D";
    r.flags = TDM_WEIGHT_FLATTEN;
    ASSERT_EQ(host_encoder_ext().load_weight(&loader, &r, &flat), TDM_OK) << last_error_encoder_ext();
    tdm_tensor_shape sh{};
    sh.struct_size = sizeof sh;
    ASSERT_EQ(host_encoder_ext().weight_shape(flat, &sh), TDM_OK);
    EXPECT_EQ(sh.ne[0], 8);
    EXPECT_EQ(sh.ne[1], 3);
    r.ne[0] = 6;  // whole stored rows, but 24 values make 4 rows of 6, not 3
    EXPECT_EQ(host_encoder_ext().load_weight(&loader, &r, &flat), TDM_ERR_SHAPE);
    EXPECT_NE(last_error_encoder_ext().find("does not flatten to [6, 3]"), std::string::npos) << last_error_encoder_ext();
    r.ne[0] = 3;  // not whole stored rows
    r.ne[1] = 8;
    EXPECT_NE(host_encoder_ext().load_weight(&loader, &r, &flat), TDM_OK);

    const float ff[4] = {1.0f, 2.0f, 4.0f, 8.0f};
    const tdm_weight* made = nullptr;
    ASSERT_EQ(ext->load_f32(&loader, "divisors", ff, 4, 1, &made), TDM_OK) << last_error_encoder_ext();
    ASSERT_EQ(host_encoder_ext().weight_shape(made, &sh), TDM_OK);
    EXPECT_EQ(sh.type, TDM_DTYPE_F32);
    EXPECT_EQ(sh.ne[0], 4);
    const float bad[2] = {1.0f, std::numeric_limits<float>::quiet_NaN()};
    EXPECT_NE(ext->load_f32(&loader, "bad", bad, 2, 1, &made), TDM_OK);
    EXPECT_NE(last_error_encoder_ext().find("not finite"), std::string::npos) << last_error_encoder_ext();
    EXPECT_EQ(ext->load_f32(&loader, "empty", ff, 0, 1, &made), TDM_ERR_INVALID_ARGUMENT);
}

}  // namespace
}  // namespace tdm
