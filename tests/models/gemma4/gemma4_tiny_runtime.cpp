// SPDX-License-Identifier: Apache-2.0
// tests/models/gemma4/gemma4_tiny_runtime.cpp
#include "gemma4_tiny_runtime.h"

#include <gtest/gtest.h>

#include <random>

#include "support/device_fixture.h"

namespace tdm::test::g4 {

GenerateParams greedy(int n) {
    GenerateParams gp;
    gp.max_tokens = n;
    gp.n_batch = kRowsMax;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    return gp;
}

Loaded load(const std::string& path, vk::Device& dev, vk::PipelineManager& pipes, uint32_t n_ctx, uint32_t rows_max,
            uint32_t block_size) {
    Loaded l;
    auto m = Model::load(path, test::build_tree_plugins(), dev);
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return l;
    l.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = n_ctx;
    kc.block_size = block_size;
    kc.rows_max = rows_max ? rows_max : n_ctx;
    auto kv = KvPool::create(dev, l.model->attention_layers(), kc, "gemma4-test");
    EXPECT_TRUE(kv.ok()) << kv.error().message();
    if (!kv.ok()) return l;
    l.kv = std::move(kv).value();
    EXPECT_EQ(l.kv->has_rings(), rows_max != 0);
    l.runner = std::make_unique<Runner>(*l.model, *l.kv, dev, pipes);
    return l;
}

Result<std::unique_ptr<DraftHeadDrafter>> load_assistant(const std::string& path, const Model& target,
                                                         const KvPool& target_kv) {
    auto src = TDM_TRY(ModelSource::open(path));
    const DraftHeadEntry* e = test::build_tree_plugins().find_draft_head_source(src->architecture(), target.arch().desc->name);
    if (!e) return Error::format("no draft head takes files of architecture {}", src->architecture());
    return DraftHeadDrafter::create(*e, "assistant", std::shared_ptr<const ModelSource>(std::move(src)), target,
                                    target_kv, test_device(), test_pipelines(), DraftHeadOptions{});
}

std::vector<int32_t> random_tokens(uint64_t seed, size_t n, int32_t lo, int32_t hi) {
    std::mt19937_64 rng(seed);
    std::vector<int32_t> t(n);
    for (auto& x : t) x = lo + int32_t(rng() % uint64_t(hi - lo));
    return t;
}

}  // namespace tdm::test::g4
