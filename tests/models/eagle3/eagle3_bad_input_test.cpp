// SPDX-License-Identifier: Apache-2.0
// tests/models/eagle3/eagle3_bad_input_test.cpp: EAGLE-3 heads that do not fit their target, or
// files that are not heads, are refused when the head is created or loaded, each with a message
// naming the problem: a file of another architecture, a reduced vocabulary without d2t, a head
// for another vocabulary, another hidden size or layers the target does not have, rope scaling
// other than llama3, more than one decoder layer.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>

#include "eagle3/synth/eagle3_synth.h"
#include "eagle3_targets.h"
#include "formats/gguf.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "speculative/draft_head.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/gguf_edit.h"
#include "support/plugin_registry.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

using test::eagle3::Target;

struct BadInputTarget {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

BadInputTarget load_bad_input_target(const std::string& path) {
    BadInputTarget t;
    auto m = Model::load(path, test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return t;
    t.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 64;
    auto kv = KvPool::create(test::test_device(), t.model->attention_layers(), kc, "eagle3-bad");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (kv.ok()) t.kv = std::move(kv).value();
    return t;
}

// The head file attached as the make_drafters code attaches --spec-type eagle3 -md FILE.
Status attach_head(const BadInputTarget& t, const std::string& head) {
    auto src = TDM_TRY(ModelSource::open(head));
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head("eagle3", t.model->arch().desc->name);
    if (!e) return Error("no eagle3 head for this target");
    DraftHeadOptions o;
    o.options = {{"n_vocab", std::to_string(t.model->info().n_vocab)},
                 {"target_n_layer", std::to_string(t.model->info().n_attention_layers)}};
    auto d = DraftHeadDrafter::create(*e, "eagle3", std::shared_ptr<const ModelSource>(std::move(src)), *t.model,
                                      *t.kv, test::test_device(), test::test_pipelines(), o);
    if (!d.ok()) return d.error();
    return {};
}

void expect_head_refused(const BadInputTarget& t, const std::string& head, const std::string& part, const char* what) {
    const Status st = attach_head(t, head);
    ASSERT_FALSE(st.ok()) << what;
    EXPECT_NE(st.error().message().find(part), std::string::npos) << what << ": " << st.error().message();
}

// A head for a Qwen3 of another shape than the tiny target's.
std::string head_for_other_qwen3(const std::string& dir, int32_t n_embd, int32_t n_vocab) {
    synth::Qwen3Shape s = *synth::qwen3_preset("tiny");
    s.n_layer = 4;
    s.n_embd = n_embd;
    s.n_vocab = n_vocab;
    synth::Qwen3SynthOptions o;
    o.weight_type = DType::F16;
    const std::string other = dir + "/other.gguf";
    EXPECT_TRUE(synth::synth_qwen3_gguf(other, s, o).ok());
    return test::eagle3::write_head(other, false, dir);
}

// `src` (a GGUF) with its eagle3.target_layers replaced.
std::string with_target_layers(const std::string& src, const std::vector<int32_t>& layers) {
    auto f = GgufFile::open(src);
    EXPECT_TRUE(f.ok());
    if (!f.ok()) return "";
    GgufWriter w;
    for (const GgufKV& kv : (*f)->kvs())
        if (kv.key != "eagle3.target_layers") w.add_value(kv.key, kv.value);
    w.add_array("eagle3.target_layers", layers);
    for (const GgufTensorInfo& ti : (*f)->tensors())
        EXPECT_TRUE(w.add_tensor(ti.name, ti.type, std::vector<int64_t>(ti.ne, ti.ne + ti.n_dims), (*f)->tensor_data(ti),
                                 ti.nbytes)
                        .ok());
    const std::string out = test::make_temp_dir("eagle3-bad") + "/layers.gguf";
    EXPECT_TRUE(w.write_file(out).ok());
    return out;
}

class Eagle3BadInput : public test::DeviceTest {};

TEST_F(Eagle3BadInput, a_file_that_is_no_head_or_lacks_d2t_is_refused) {
    const std::string dir = test::make_temp_dir("eagle3-bad-file");
    const std::string target = test::eagle3::write_target(Target::qwen3, dir);
    BadInputTarget t = load_bad_input_target(target);
    ASSERT_TRUE(t.model && t.kv);
    expect_head_refused(t, target, "holds no EAGLE-3 head", "the target's own file");
    test::GgufEdit drop;
    drop.drop_tensor = "d2t";
    const std::string head = test::eagle3::write_head(target, false, dir);
    ASSERT_TRUE(test::copy_gguf_with_edit(head, dir + "/no-d2t.gguf", drop).ok());
    expect_head_refused(t, dir + "/no-d2t.gguf", "has no d2t to map them", "a reduced vocabulary without d2t");
}

TEST_F(Eagle3BadInput, a_head_for_another_target_is_refused_naming_both_values) {
    const std::string dir = test::make_temp_dir("eagle3-bad-target");
    BadInputTarget t = load_bad_input_target(test::eagle3::write_target(Target::qwen3, dir));
    ASSERT_TRUE(t.model && t.kv);
    expect_head_refused(t, head_for_other_qwen3(test::make_temp_dir("eagle3-bad-vocab"), 64, 1024),
                        "the head is for a vocabulary of 1024 tokens, the target's has 512", "another vocabulary");
    expect_head_refused(t, head_for_other_qwen3(test::make_temp_dir("eagle3-bad-width"), 128, 512),
                        "the head reads target states of width 128, the target's are 64", "another width");
    const std::string head = test::eagle3::write_head(test::eagle3::write_target(Target::qwen3, dir), false, dir);
    expect_head_refused(t, with_target_layers(head, {0, 2, 40}), "40", "a layer the target does not have");
}

TEST_F(Eagle3BadInput, hf_configs_the_head_cannot_run_are_refused_by_name) {
    const std::string dir = test::make_temp_dir("eagle3-bad-hf");
    BadInputTarget t = load_bad_input_target(test::eagle3::write_target(Target::llama, dir));
    ASSERT_TRUE(t.model && t.kv);
    const std::string head = test::eagle3::write_head(test::eagle3::write_target(Target::llama, dir), true, dir);
    std::ifstream in(head + "/config.json");
    const nlohmann::json good = nlohmann::json::parse(in);
    auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
        nlohmann::json c = good;
        edit(c);
        std::ofstream(head + "/config.json") << c.dump(2);
    };
    with([](nlohmann::json& c) { c["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}}; });
    expect_head_refused(t, head, "rope_scaling of type 'yarn' is not supported", "yarn scaling in config.json");
    with([](nlohmann::json& c) { c["num_hidden_layers"] = 2; });
    expect_head_refused(t, head, "one decoder layer", "two decoder layers");
    with([](nlohmann::json& c) { c.erase("draft_vocab_size"); });
    expect_head_refused(t, head, "d2t maps 256 draft ids, draft_vocab_size is 512", "d2t of 256 for 512 draft ids");
}

}  // namespace
}  // namespace tdm
