// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_ring_prefill_test.cpp: a prefill chunk wider than the KV rings were sized
// for (-b 512 against rings sized for 256 rows, kRingPrefillRowsMax) runs in chunks the rings
// hold, instead of being refused, and gives the logits of chunks that fit to begin with.
#include <gtest/gtest.h>

#include <random>

#include "engine/generate.h"
#include "gemma4/synth/gemma4_synth.h"
#include "gemma4_tiny_runtime.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"

namespace tdm {
namespace {


class Gemma4RingPrefill : public test::DeviceTest {};

TEST_F(Gemma4RingPrefill, a_chunk_wider_than_the_rings_runs_in_chunks_they_hold) {
    const std::string path = test::make_temp_dir("gemma4-ring-prefill") + "/m.gguf";
    synth::Gemma4SynthOptions o;
    o.weight_type = DType::F16;
    const auto shape = synth::gemma4_preset("tiny-31b");
    ASSERT_TRUE(shape.ok());
    ASSERT_TRUE(synth::synth_gemma4_gguf(path, *shape, o).ok());
    auto model = Model::load(path, test::build_tree_plugins(), device());
    ASSERT_TRUE(model.ok()) << model.error().message();
    KvPoolConfig kc;
    kc.n_ctx = 128;
    kc.rows_max = 8;  // rings of window (8) + 7 positions, rounded up to whole blocks
    auto kv = KvPool::create(device(), (*model)->attention_layers(), kc, "test");
    ASSERT_TRUE(kv.ok()) << kv.error().message();
    ASSERT_TRUE((*kv)->has_rings());
    Runner runner(**model, **kv, device(), pipelines());
    std::mt19937 rng(7);
    std::vector<int32_t> prompt(61);
    for (int32_t& t : prompt) t = 3 + int32_t(rng() % 1000);
    std::vector<float> logits[2];
    const uint32_t chunks[2] = {512, 8};
    for (int i = 0; i < 2; ++i) {
        const int seq = *(*kv)->add_sequence();
        GenerateParams gp;
        gp.max_tokens = 0;  // the prompt's logits only
        gp.n_batch = chunks[i];
        auto st = generate(runner, nullptr, seq, prompt, gp, {},
                           [&](const float* row, uint32_t n) { logits[i].insert(logits[i].end(), row, row + n); },
                           /*logits_all=*/true);
        (*kv)->free_sequence(seq);
        ASSERT_TRUE(st.ok()) << "chunks of " << chunks[i] << ": " << st.error().message();
    }
    ASSERT_EQ(logits[0].size(), prompt.size() * (*model)->info().n_vocab);
    EXPECT_TRUE(logits[0] == logits[1]);
}

}  // namespace
}  // namespace tdm
