// SPDX-License-Identifier: Apache-2.0
// tests/abi/abi_test.cpp: the plugin ABI's compatibility promises (tandem.h §1).
//  - A plugin built against the frozen ABI 1 headers (tests/abi/v1) loads in
//    this host, its architecture runs (logits equal a plain C++ reference) and
//    its drafter drives speculative decoding exactly, although tdm_op_desc and
//    tdm_drafter_desc have grown since (the host reads the shorter structs).
//  - A plugin that speaks ABI 2 only is refused by a host offering ABI 1, with
//    both versions named.
//  - A drafter that reports failure (v2 calls) is turned off for the request
//    and the output stays exact.
//  - A plugin built against the frozen ABI 3.0 headers (tests/abi/v3) loads as
//    ABI 3 minor 0, finds what 3.0 promised and no op of a later minor, and its
//    drafter drafts exactly.
//  - The struct reader's rules: zeroed tails, larger structs cut, minimum sizes
//    refused with the sizes named, arrays strided by the element's struct_size.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "common/fp16.h"
#include "engine/generate.h"
#include "writers/gguf_writer.h"
#include "formats/model_source.h"
#include "plugin/abi_structs.h"
#include "plugin/handles.h"
#include "plugin/plugin_loader.h"
#include "speculative/plugin_drafter.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

std::string test_plugin(const std::string& name) {
    return std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-" + name + ".so";
}

// ---------------------------------------------------------------------------
// The frozenv1 model: weights and a double-precision reference.
constexpr int kEmbd = 32, kVocab = 64;

struct FrozenWeights {
    std::vector<float> embd, norm, out;  // [vocab][embd], [embd], [vocab][embd]
};

FrozenWeights frozen_weights(uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    FrozenWeights w;
    w.embd.resize(kVocab * kEmbd);
    w.out.resize(kVocab * kEmbd);
    w.norm.resize(kEmbd);
    for (float& x : w.embd) x = nd(rng);
    for (float& x : w.out) x = 0.3f * nd(rng);
    for (float& x : w.norm) x = 1.0f + 0.1f * nd(rng);
    return w;
}

std::string write_frozen_model(const FrozenWeights& w) {
    GgufWriter g;
    g.add_string("general.architecture", "frozenv1");
    g.add_u32("frozenv1.embedding_length", kEmbd);
    g.add_u32("frozenv1.vocab_size", kVocab);
    g.add_u32("frozenv1.context_length", 256);
    EXPECT_TRUE(g.add_tensor("token_embd.weight", 0, {kEmbd, kVocab}, w.embd.data(), w.embd.size() * 4).ok());
    EXPECT_TRUE(g.add_tensor("output_norm.weight", 0, {kEmbd}, w.norm.data(), w.norm.size() * 4).ok());
    EXPECT_TRUE(g.add_tensor("output.weight", 0, {kEmbd, kVocab}, w.out.data(), w.out.size() * 4).ok());
    const std::string path = test::make_temp_dir("abi") + "/frozen.gguf";
    EXPECT_TRUE(g.write_file(path).ok());
    return path;
}

// Logits of every position of one sequence, written from the plugin's comment
// (not from its code): x = E[t]; k = v = x; causal softmax(q.k / sqrt(d)) v;
// h = x + a; logits = W rms_norm(h) * w.
std::vector<std::vector<double>> frozen_reference(const FrozenWeights& w, const std::vector<int32_t>& tokens) {
    std::vector<std::vector<double>> logits;
    for (size_t t = 0; t < tokens.size(); ++t) {
        const float* q = &w.embd[size_t(tokens[t]) * kEmbd];
        std::vector<double> score(t + 1);
        double mx = -1e300;
        for (size_t j = 0; j <= t; ++j) {
            const float* k = &w.embd[size_t(tokens[j]) * kEmbd];
            double s = 0;
            for (int c = 0; c < kEmbd; ++c) s += double(q[c]) * k[c];
            score[j] = s / std::sqrt(double(kEmbd));
            mx = std::max(mx, score[j]);
        }
        double sum = 0;
        for (double& s : score) sum += (s = std::exp(s - mx));
        std::vector<double> h(kEmbd);
        for (int c = 0; c < kEmbd; ++c) {
            double a = 0;
            for (size_t j = 0; j <= t; ++j) a += score[j] / sum * w.embd[size_t(tokens[j]) * kEmbd + c];
            h[c] = q[c] + a;
        }
        double ms = 0;
        for (double v : h) ms += v * v;
        const double r = 1.0 / std::sqrt(ms / kEmbd + 1e-6);
        std::vector<double> row(kVocab);
        for (int v = 0; v < kVocab; ++v) {
            double s = 0;
            for (int c = 0; c < kEmbd; ++c) s += w.out[size_t(v) * kEmbd + c] * (h[c] * r * w.norm[c]);
            row[v] = s;
        }
        logits.push_back(row);
    }
    return logits;
}

struct Loaded {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
};

Loaded load(const std::string& path, const Registry& reg) {
    Loaded l;
    auto m = Model::load(path, reg, test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return l;
    l.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 256;
    kc.f16 = false;
    auto kv = KvPool::create(test::test_device(), l.model->attention_layers(), kc, "abi test");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    l.kv = std::move(kv).value();
    return l;
}

GenerateParams greedy(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    return gp;
}

std::vector<int32_t> random_prompt(uint64_t seed, size_t len) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> p(len);
    for (auto& t : p) t = int32_t(rng() % kVocab);
    return p;
}

std::unique_ptr<Registry> registry_with(std::initializer_list<const char*> plugins) {
    auto reg = std::make_unique<Registry>();
    for (const char* p : plugins) {
        auto st = load_plugin_file(*reg, test_plugin(p));
        EXPECT_TRUE(st.ok()) << st.error().message();
    }
    return reg;
}

class FrozenV1 : public test::DeviceTest {};

TEST_F(FrozenV1, plugin_built_against_the_v1_headers_loads_as_abi_1) {
    auto reg = registry_with({"frozen_v1"});
    ASSERT_EQ(reg->plugins().size(), 1u);
    const PluginRecord& p = *reg->plugins()[0];
    EXPECT_EQ(p.error, "");
    EXPECT_EQ(p.abi, 1u);
    EXPECT_NE(reg->find_arch_gguf("frozenv1"), nullptr);
    EXPECT_NE(reg->find_drafter("frozen-echo"), nullptr);
    // The descriptors it registered are shorter than this host's: the fields
    // appended since (v2 drafter calls) read as zero.
    const DrafterEntry* d = reg->find_drafter("frozen-echo");
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->desc->begin2, nullptr);
    EXPECT_EQ(d->desc->propose2, nullptr);
    EXPECT_NE(d->desc->propose, nullptr);
}

TEST_F(FrozenV1, descriptors_grew_since_v1_yet_the_v1_plugin_is_served) {
    // Fields were appended to tdm_op_desc (custom) and tdm_drafter_desc (the
    // *2 calls) in ABI 2; the frozen plugin passes the v1 sizes.
    static_assert(sizeof(tdm_op_desc) > TDM_V1_SIZEOF_OP_DESC);
    static_assert(sizeof(tdm_drafter_desc) > TDM_V1_SIZEOF_DRAFTER_DESC);
    static_assert(sizeof(tdm_host_api) > TDM_V1_SIZEOF_HOST_API);
    auto reg = registry_with({"frozen_v1"});
    const FrozenWeights w = frozen_weights(5);
    Loaded l = load(write_frozen_model(w), *reg);
    ASSERT_TRUE(l.model);
    Runner runner(*l.model, *l.kv, device(), pipelines());
    const int seq = *l.kv->add_sequence();
    const std::vector<int32_t> tokens = {3, 17, 3, 40, 41, 9};
    std::vector<int32_t> pos(tokens.size()), rows(tokens.size());
    for (size_t i = 0; i < tokens.size(); ++i) pos[i] = rows[i] = int32_t(i);
    auto out = runner.forward({tokens, pos, seq, rows});  // graph ops sent with v1-sized descs
    ASSERT_TRUE(out.ok()) << out.error().message();
    const auto ref = frozen_reference(w, tokens);
    double worst = 0;
    for (size_t r = 0; r < tokens.size(); ++r)
        for (int v = 0; v < kVocab; ++v) {
            const double got = out->logits[r * kVocab + size_t(v)];
            worst = std::max(worst, std::abs(got - ref[r][size_t(v)]) / (1.0 + std::abs(ref[r][size_t(v)])));
        }
    EXPECT_LT(worst, 1e-4) << "frozenv1 logits differ from the reference";
}

TEST_F(FrozenV1, its_drafter_gives_the_plain_greedy_tokens) {
    auto reg = registry_with({"frozen_v1"});
    const FrozenWeights w = frozen_weights(9);
    Loaded l = load(write_frozen_model(w), *reg);
    ASSERT_TRUE(l.model);
    Runner runner(*l.model, *l.kv, device(), pipelines());
    const int seq = *l.kv->add_sequence();
    auto drafter = PluginDrafter::create(*reg->find_drafter("frozen-echo"), {});
    ASSERT_TRUE(drafter.ok()) << drafter.error().message();
    Drafter* chain[] = {drafter->get()};
    SpecParams sp;
    sp.draft_max = 3;
    uint64_t drafted = 0;
    for (uint64_t i = 0; i < 6; ++i) {
        const auto prompt = random_prompt(100 + i, 5 + i);
        ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy(24), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(24), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(drafted, 0u) << "the frozen drafter never proposed";
}

// ---------------------------------------------------------------------------
TEST(AbiNegotiation, v2_plugin_meets_a_host_offering_only_v1_and_is_refused_naming_both) {
    Registry reg;
    auto st = load_plugin_file(reg, test_plugin("v2"), {}, /*host_abi_max=*/1);
    ASSERT_FALSE(st.ok());
    const std::string& m = st.error().message();
    EXPECT_NE(m.find("speaks ABI 2..2"), std::string::npos) << m;
    EXPECT_NE(m.find("offers ABI 1..1"), std::string::npos) << m;
    EXPECT_NE(m.find("tandem-test-v2.so"), std::string::npos) << m;
    EXPECT_NE(m.find("newer tandem"), std::string::npos) << m;
}

TEST(AbiNegotiation, v2_plugin_loads_as_abi_2_beside_a_v1_plugin) {
    auto reg = registry_with({"frozen_v1", "v2"});
    ASSERT_EQ(reg->plugins().size(), 2u);
    EXPECT_EQ(reg->plugins()[0]->abi, 1u);
    EXPECT_EQ(reg->plugins()[1]->abi, 2u);
    EXPECT_NE(reg->find_drafter("flaky-propose"), nullptr);
}

TEST(AbiNegotiation, a_descriptor_below_the_v1_size_is_refused_by_name_and_the_other_plugins_load) {
    PluginSearch search;
    search.use_env = false;
    search.use_default_dirs = false;
    search.dirs = {TANDEM_TEST_PLUGIN_DIR};
    auto reg = load_plugins(search);
    ASSERT_TRUE(reg.ok()) << reg.error().message();
    const PluginRecord* bad = nullptr;
    for (const auto& p : (*reg)->plugins())
        if (p->path.find("tandem-test-short_descriptor.so") != std::string::npos) bad = p.get();
    ASSERT_NE(bad, nullptr);
    EXPECT_NE(bad->error.find("struct_size is 8 bytes, ABI 1 needs at least 72"), std::string::npos) << bad->error;
    EXPECT_NE(bad->error.find("drafter descriptor"), std::string::npos) << bad->error;
    EXPECT_EQ((*reg)->find_drafter("short"), nullptr);
    EXPECT_NE((*reg)->find_drafter("frozen-echo"), nullptr) << "a broken plugin stopped the others";
    EXPECT_NE((*reg)->find_drafter("flaky-propose"), nullptr);
}

class FailingDrafter : public test::DeviceTest {};

TEST_F(FailingDrafter, a_drafter_that_reports_failure_is_turned_off_and_the_output_stays_exact) {
    auto reg = registry_with({"frozen_v1", "v2"});
    const FrozenWeights w = frozen_weights(13);
    Loaded l = load(write_frozen_model(w), *reg);
    ASSERT_TRUE(l.model);
    Runner runner(*l.model, *l.kv, device(), pipelines());
    const int seq = *l.kv->add_sequence();
    for (const char* type : {"flaky-propose", "flaky-begin"}) {
        const auto prompt = random_prompt(7, 6);
        ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy(20), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        auto drafter = PluginDrafter::create(*reg->find_drafter(type), {});
        ASSERT_TRUE(drafter.ok()) << drafter.error().message();
        Drafter* chain[] = {drafter->get()};
        SpecParams sp;
        sp.draft_max = 2;
        ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(20), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << type << ": " << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << type;
        const std::string& why = spec->stats.drafters[0].failure;
        EXPECT_NE(why.find("synthetic failure"), std::string::npos) << type << ": '" << why << "'";
        EXPECT_NE(why.find(type), std::string::npos) << why;
        if (std::string(type) == "flaky-propose") {
            EXPECT_EQ(spec->stats.drafters[0].calls_gen, 3u) << "proposals stop after the failing one";
            EXPECT_GT(spec->stats.drafted, 0u);
        } else {
            EXPECT_EQ(spec->stats.drafters[0].calls_gen, 0u) << "a drafter that failed to begin is never asked";
        }
    }
}

// ---------------------------------------------------------------------------
// ABI 3.0: a plugin built against the frozen headers of ABI 3's first release
// (tests/abi/v3), from before minor versions.

TEST(AbiV3, plugin_built_against_the_3_0_headers_loads_as_abi_3_minor_0) {
    auto reg = registry_with({"v3"});
    ASSERT_EQ(reg->plugins().size(), 1u);
    const PluginRecord& p = *reg->plugins()[0];
    // its init checked ABI 3's ops and extensions, and that no op of a later minor is offered to it
    EXPECT_EQ(p.error, "");
    EXPECT_EQ(p.abi, 3u);
    EXPECT_EQ(p.abi_minor, 0u) << "its negotiation writes no minor: it is taken as built against 3.0";
    EXPECT_NE(reg->find_drafter("v3-echo"), nullptr);
}

TEST(AbiV3, plugin_of_abi_3_meets_a_host_offering_only_1_and_2_and_is_refused_naming_both) {
    Registry reg;
    auto st = load_plugin_file(reg, test_plugin("v3"), {}, /*host_abi_max=*/2);
    ASSERT_FALSE(st.ok());
    const std::string& m = st.error().message();
    EXPECT_NE(m.find("speaks ABI 3..3"), std::string::npos) << m;
    EXPECT_NE(m.find("offers ABI 1..2"), std::string::npos) << m;
    EXPECT_NE(m.find("tandem-test-v3.so"), std::string::npos) << m;
}

class FrozenV3 : public test::DeviceTest {};

TEST_F(FrozenV3, its_drafter_gives_the_plain_greedy_tokens_beside_a_v1_architecture) {
    auto reg = registry_with({"frozen_v1", "v3"});
    const FrozenWeights w = frozen_weights(21);
    Loaded l = load(write_frozen_model(w), *reg);
    ASSERT_TRUE(l.model);
    Runner runner(*l.model, *l.kv, device(), pipelines());
    const int seq = *l.kv->add_sequence();
    auto drafter = PluginDrafter::create(*reg->find_drafter("v3-echo"), {});
    ASSERT_TRUE(drafter.ok()) << drafter.error().message();
    Drafter* chain[] = {drafter->get()};
    SpecParams sp;
    sp.draft_max = 2;
    uint64_t drafted = 0;
    for (uint64_t i = 0; i < 4; ++i) {
        const auto prompt = random_prompt(200 + i, 6 + i);
        ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
        auto plain = generate(runner, nullptr, seq, prompt, greedy(20), {});
        ASSERT_TRUE(plain.ok()) << plain.error().message();
        ASSERT_TRUE(l.kv->truncate(seq, 0).ok());
        auto spec = generate_speculative(runner, nullptr, seq, prompt, greedy(20), chain, sp, {});
        ASSERT_TRUE(spec.ok()) << spec.error().message();
        EXPECT_EQ(spec->gen.tokens, plain->tokens) << "prompt " << i;
        drafted += spec->stats.drafted;
    }
    EXPECT_GT(drafted, 0u) << "the v3 drafter never proposed";
}

// ---------------------------------------------------------------------------
// The struct reader (host/plugin/abi_structs.h).

TEST(AbiStructs, a_shorter_struct_reads_with_its_missing_fields_zero) {
    tdm_drafter_desc big;
    std::memset(&big, 0xAB, sizeof big);  // garbage past the v1 size
    big.struct_size = TDM_V1_SIZEOF_DRAFTER_DESC;
    big.name = "x";
    auto r = read_abi_struct(&big, 1, "test");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(r->struct_size, sizeof(tdm_drafter_desc));
    EXPECT_STREQ(r->name, "x");
    EXPECT_EQ(r->begin2, nullptr);
    EXPECT_EQ(r->propose2, nullptr);
    EXPECT_EQ(r->accept2, nullptr);
}

TEST(AbiStructs, a_longer_struct_from_a_newer_plugin_is_cut_to_what_the_host_knows) {
    struct Future {
        tdm_arch_desc known;
        uint64_t appended_in_v3;
    } f{};
    f.known.struct_size = sizeof f;
    f.known.name = "future";
    f.appended_in_v3 = 42;
    auto r = read_abi_struct(&f.known, 2, "test");
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_STREQ(r->name, "future");
    EXPECT_EQ(r->struct_size, sizeof(tdm_arch_desc));
}

TEST(AbiStructs, a_struct_below_the_minimum_of_its_version_is_refused_with_both_sizes) {
    tdm_op_desc d{};
    d.struct_size = 100;
    auto r = read_abi_struct(&d, 1, "graph_op: tdm_op_desc");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(r.error().message().find("100 bytes"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("at least 152"), std::string::npos) << r.error().message();
    // A v1 size is enough for a v1 plugin, not for one that negotiated v2.
    d.struct_size = TDM_V1_SIZEOF_OP_DESC;
    EXPECT_TRUE(read_abi_struct(&d, 1, "x").ok());
    EXPECT_FALSE(read_abi_struct(&d, 2, "x").ok());
}

TEST(AbiStructs, arrays_step_by_the_elements_struct_size) {
    struct Wide {  // a future plugin's tdm_attention_layer with one more field
        tdm_attention_layer l;
        uint32_t appended;
    };
    Wide a[3]{};
    for (uint32_t i = 0; i < 3; ++i) {
        a[i].l.struct_size = sizeof(Wide);
        a[i].l.n_kv_head = i + 1;
        a[i].l.head_dim_k = 64;
        a[i].appended = 7;
    }
    auto r = read_abi_array(&a[0].l, 3, 2, "layers");
    ASSERT_TRUE(r.ok()) << r.error().message();
    ASSERT_EQ(r->size(), 3u);
    for (uint32_t i = 0; i < 3; ++i) EXPECT_EQ((*r)[i].n_kv_head, i + 1);
    a[2].l.struct_size = sizeof(tdm_attention_layer);
    auto bad = read_abi_array(&a[0].l, 3, 2, "layers");
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("element 2"), std::string::npos) << bad.error().message();
    EXPECT_FALSE(read_abi_array<tdm_attention_layer>(nullptr, 2, 1, "layers").ok());
}

TEST(AbiStructs, an_abi_1_array_is_read_by_the_v1_size_whatever_its_struct_size_says) {
    // The ABI 1 host stepped through these arrays by sizeof and never read the
    // elements' struct_size; plugins that left it zero must keep loading.
    tdm_attention_layer a[3]{};
    for (uint32_t i = 0; i < 3; ++i) {
        a[i].struct_size = 0;
        a[i].n_kv_head = i + 2;
        a[i].head_dim_k = a[i].head_dim_v = 128;
        a[i].window = i == 1 ? 512 : 0;
    }
    auto r = read_abi_array(a, 3, 1, "layers");
    ASSERT_TRUE(r.ok()) << r.error().message();
    for (uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ((*r)[i].n_kv_head, i + 2);
        EXPECT_EQ((*r)[i].head_dim_v, 128u);
    }
    EXPECT_EQ((*r)[1].window, 512u);
    // from ABI 2 on, struct_size is the stride and must be set
    EXPECT_FALSE(read_abi_array(a, 3, 2, "layers").ok());
}

TEST(AbiStructs, the_host_fills_only_as_much_of_an_output_struct_as_the_plugin_has) {
    struct Padded {
        tdm_tensor_shape s;
        uint32_t canary;
    } p{};
    p.s.struct_size = TDM_V1_SIZEOF_TENSOR_SHAPE;
    p.canary = 0xC0FFEE;
    tdm_tensor_shape v{};
    v.struct_size = sizeof v;
    v.type = TDM_DTYPE_Q8_0;
    v.ne[0] = 4096;
    std::string err;
    EXPECT_EQ(write_abi_struct(&p.s, v, "shape", &err), TDM_OK) << err;
    EXPECT_EQ(p.s.ne[0], 4096);
    EXPECT_EQ(p.s.struct_size, TDM_V1_SIZEOF_TENSOR_SHAPE);
    EXPECT_EQ(p.canary, 0xC0FFEEu);
    p.s.struct_size = 8;
    EXPECT_EQ(write_abi_struct(&p.s, v, "shape", &err), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(err.find("struct_size is 8"), std::string::npos) << err;
}

TEST(AbiStructs, a_plugin_message_without_a_terminating_nul_is_read_within_its_buffer) {
    char buf[8];
    std::memset(buf, 'x', sizeof buf);  // no NUL anywhere
    EXPECT_EQ(plugin_message(buf, sizeof buf), "xxxxxxxx");
    buf[0] = '\0';
    EXPECT_EQ(plugin_message(buf, sizeof buf, "fallback"), "fallback");
    EXPECT_EQ(plugin_message(nullptr, 0, "none"), "none");
}

TEST(AbiStructs, meta_get_string_returns_the_same_storage_for_the_same_key) {
    const std::string path = write_frozen_model(frozen_weights(1));
    auto src = ModelSource::open(path);
    ASSERT_TRUE(src.ok()) << src.error().message();
    tdm_model_source h;
    h.src = src->get();
    const char* first = nullptr;
    for (int i = 0; i < 1000; ++i) {
        const char* s = nullptr;
        ASSERT_EQ(host_api()->meta_get_string(&h, "general.architecture", &s), TDM_OK);
        if (!first) first = s;
        EXPECT_EQ(s, first);
    }
    EXPECT_STREQ(first, "frozenv1");
    EXPECT_EQ(h.strings.size(), 1u) << "storage grew with repeated calls";
}

}  // namespace
}  // namespace tdm
