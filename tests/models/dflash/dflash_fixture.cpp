// SPDX-License-Identifier: Apache-2.0
// tests/models/dflash/dflash_fixture.cpp: the tiny target and its heads (dflash_fixture.h).
#include "dflash_fixture.h"

#include <gtest/gtest.h>

#include <fstream>

#include "dflash/synth/dflash_synth.h"
#include "formats/gguf.h"
#include "llama/synth/llama_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/device_fixture.h"
#include "support/plugin_registry.h"
#include "writers/gguf_writer.h"

namespace tdm::test::dflash {

namespace {

constexpr uint64_t kHeadSeed = 7;

Status write_target(TargetArch arch, const std::string& path) {
    if (arch == TargetArch::llama) {
        synth::LlamaShape s = *synth::llama_preset("tiny");
        s.n_layer = 5;
        s.rope_scaling.reset();
        synth::LlamaSynthOptions o;
        o.weight_type = DType::F16;
        return synth::synth_llama_gguf(path, s, o);
    }
    synth::Qwen3Shape s = *synth::qwen3_preset("tiny");
    s.n_layer = 5;
    synth::Qwen3SynthOptions o;
    o.weight_type = DType::F16;
    return synth::synth_qwen3_gguf(path, s, o);
}

synth::DflashSynthOptions head_options() {
    synth::DflashSynthOptions o;
    o.weight_type = DType::F32;
    o.seed = kHeadSeed;
    return o;
}

}  // namespace

Target load_target(const std::string& dir, uint32_t n_ctx, TargetArch arch) {
    Target t;
    t.path = dir + (arch == TargetArch::llama ? "/llama.gguf" : "/qwen3.gguf");
    const Status st = write_target(arch, t.path);
    EXPECT_TRUE(st.ok()) << st.error().message();
    if (!st.ok()) return t;
    auto m = Model::load(t.path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return t;
    t.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = n_ctx;
    auto kv = KvPool::create(test::test_device(), t.model->attention_layers(), kc, "dflash-target");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) t.kv = std::move(kv).value();
    return t;
}

std::string write_head(const std::string& target, const std::string& dir, int32_t block,
                       const std::function<void(nlohmann::json&)>& edit) {
    auto shape = synth::dflash_shape_for_target(target, 2, block);
    EXPECT_TRUE(shape.ok()) << shape.error().message();
    if (!shape.ok()) return "";
    const Status st = synth::synth_dflash_hf(dir, *shape, head_options());
    EXPECT_TRUE(st.ok()) << st.error().message();
    if (edit) {
        nlohmann::json c;
        std::ifstream(dir + "/config.json") >> c;
        edit(c);
        std::ofstream(dir + "/config.json") << c.dump(2);
    }
    return dir;
}

std::string write_gguf_head(const std::string& target, const std::string& path, int32_t block,
                            const std::function<void(synth::DflashShape&)>& edit) {
    auto shape = synth::dflash_shape_for_target(target, 2, block);
    EXPECT_TRUE(shape.ok()) << shape.error().message();
    if (!shape.ok()) return "";
    if (edit) edit(*shape);
    const Status st = synth::synth_dflash_gguf(path, *shape, head_options());
    EXPECT_TRUE(st.ok()) << st.error().message();
    return path;
}

std::string with_target_tables(const std::string& head, const std::string& target, const std::string& out) {
    auto h = GgufFile::open(head);
    auto t = GgufFile::open(target);
    EXPECT_TRUE(h.ok() && t.ok());
    if (!h.ok() || !t.ok()) return "";
    GgufWriter w;
    for (const GgufKV& kv : (*h)->kvs()) w.add_value(kv.key, kv.value);
    auto copy = [&](const GgufFile& f, const GgufTensorInfo& ti) {
        EXPECT_TRUE(
            w.add_tensor(ti.name, ti.type, std::vector<int64_t>(ti.ne, ti.ne + ti.n_dims), f.tensor_data(ti), ti.nbytes)
                .ok());
    };
    for (const GgufTensorInfo& ti : (*h)->tensors()) copy(**h, ti);
    for (const GgufTensorInfo& ti : (*t)->tensors())
        if (ti.name == "token_embd.weight" || ti.name == "output.weight") copy(**t, ti);
    EXPECT_TRUE(w.write_file(out).ok());
    return out;
}

Result<std::unique_ptr<DraftHeadDrafter>> make_head(const Target& t, const std::string& head) {
    auto src = TDM_TRY(ModelSource::open(head));
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("dflash", t.model->arch().desc->name);
    if (!e) return Error("no dflash head for this target");
    DraftHeadOptions o;
    o.options = {{"n_vocab", std::to_string(t.model->info().n_vocab)},
                 {"target_n_layer", std::to_string(t.model->info().n_attention_layers)}};
    return DraftHeadDrafter::create(*e, "dflash", std::shared_ptr<const ModelSource>(std::move(src)), *t.model, *t.kv,
                                    test::test_device(), test::test_pipelines(), o);
}

}  // namespace tdm::test::dflash
