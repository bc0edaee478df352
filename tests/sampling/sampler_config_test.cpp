// SPDX-License-Identifier: Apache-2.0
// tests/sampling/sampler_config_test.cpp: the [sampling] defaults of the config file are the
// sampler's own (llama.cpp's), so a user who sets nothing gets the same chain either way.
#include "config/config.h"
#include "config/logit_bias_text.h"
#include "sampling/sampler.h"

#include <gtest/gtest.h>

namespace tdm::test {
namespace {

TEST(SamplerConfig, config_defaults_equal_the_sampler_defaults) {
    const SamplingConfig c;
    const SamplerParams p;
    EXPECT_EQ(c.temperature, p.temperature);
    EXPECT_EQ(c.top_k, p.top_k);
    EXPECT_EQ(c.top_p, p.top_p);
    EXPECT_EQ(c.min_p, p.min_p);
    EXPECT_EQ(c.repeat_penalty, p.repeat_penalty);
    EXPECT_EQ(c.repeat_last_n, p.repeat_last_n);
    EXPECT_EQ(c.presence_penalty, p.presence_penalty);
    EXPECT_EQ(c.frequency_penalty, p.frequency_penalty);
    EXPECT_TRUE(c.logit_bias.empty() && p.logit_bias.empty());
    EXPECT_EQ(c.seed, -1);  // random
    EXPECT_FALSE(p.seed.has_value());
}

TEST(SamplerConfig, every_value_the_config_accepts_makes_a_valid_sampler) {
    // The corners of the config's ranges; the sampler must not reject what the file allowed.
    const char* text = R"(
[sampling]
temperature = 0
top_k = 0
top_p = 0
min_p = 1
repeat_penalty = 0.001
repeat_last_n = -1
presence_penalty = -2
frequency_penalty = 2
logit_bias = ["0-100", "5+100", "7+0.5"]
seed = 0
)";
    auto c = load_config_text(text, "corners");
    ASSERT_TRUE(c.ok()) << c.error().message();
    SamplerParams p;
    p.temperature = c->sampling.temperature;
    p.top_k = c->sampling.top_k;
    p.top_p = c->sampling.top_p;
    p.min_p = c->sampling.min_p;
    p.repeat_penalty = c->sampling.repeat_penalty;
    p.repeat_last_n = c->sampling.repeat_last_n;
    p.presence_penalty = c->sampling.presence_penalty;
    p.frequency_penalty = c->sampling.frequency_penalty;
    for (const std::string& entry : c->sampling.logit_bias) {
        auto b = parse_logit_bias(entry);
        ASSERT_TRUE(b.ok()) << b.error().message();
        p.logit_bias.push_back({b->token, b->bias});
    }
    ASSERT_EQ(p.logit_bias.size(), 3u);
    EXPECT_EQ(p.logit_bias[0].bias, -100.0f);
    EXPECT_EQ(p.logit_bias[2].token, 7);
    p.seed = static_cast<uint64_t>(c->sampling.seed);
    EXPECT_TRUE(Sampler::create(p).ok());
}

}  // namespace
}  // namespace tdm::test
