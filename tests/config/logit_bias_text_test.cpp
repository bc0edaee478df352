// SPDX-License-Identifier: Apache-2.0
// tests/config/logit_bias_text_test.cpp: llama.cpp's TOKEN(+|-)BIAS spelling of a logit
// bias, as --logit-bias and [sampling] logit_bias take it, and the config's checks of it.
// To add a case: a row in the accepted table or a spelling in the rejected list.
#include "config/config.h"
#include "config/logit_bias_text.h"

#include <gtest/gtest.h>

namespace tdm::test {
namespace {

TEST(LogitBiasText, reads_a_token_id_a_sign_and_a_number) {
    const struct {
        const char* text;
        int32_t token;
        float bias;
    } cases[] = {
        {"15043+1", 15043, 1.0f}, {"15043-1", 15043, -1.0f}, {"0+0", 0, 0.0f},
        {"2-100", 2, -100.0f},    {"7+0.25", 7, 0.25f},      {"9+1e1", 9, 10.0f},
    };
    for (const auto& c : cases) {
        auto b = parse_logit_bias(c.text);
        ASSERT_TRUE(b.ok()) << c.text << ": " << b.error().message();
        EXPECT_EQ(b->token, c.token) << c.text;
        EXPECT_EQ(b->bias, c.bias) << c.text;
    }
}

TEST(LogitBiasText, refuses_other_spellings_quoting_them) {
    for (const char* bad : {"", "15043", "+1", "-1+1", "15043+", "15043*1", "abc+1", "1+inf", "1-nan", "1+1x",
                            "99999999999+1", "1+-1", "1 +1"}) {
        auto b = parse_logit_bias(bad);
        ASSERT_FALSE(b.ok()) << bad;
        EXPECT_NE(b.error().message().find("TOKEN+BIAS"), std::string::npos) << b.error().message();
    }
}

TEST(LogitBiasText, the_config_file_checks_its_sampling_penalties_and_biases) {
    auto good = load_config_text("[sampling]\npresence_penalty = 1.5\nfrequency_penalty = -2\nlogit_bias = [\"3+5\"]\n",
                                 "test.toml");
    ASSERT_TRUE(good.ok()) << good.error().message();
    EXPECT_EQ(good->sampling.presence_penalty, 1.5f);
    EXPECT_EQ(good->sampling.logit_bias, std::vector<std::string>{"3+5"});
    for (const auto& [text, needle] : std::vector<std::pair<const char*, const char*>>{
             {"[sampling]\npresence_penalty = 2.5\n", "sampling.presence_penalty"},
             {"[sampling]\nfrequency_penalty = -3\n", "sampling.frequency_penalty"},
             {"[sampling]\nlogit_bias = [\"3*5\"]\n", "'3*5' is not a logit bias"},
             {"[sampling]\nlogit_bias = [\"3+500\"]\n", "between -100 and 100"},
         }) {
        auto c = load_config_text(text, "test.toml");
        ASSERT_FALSE(c.ok()) << text;
        EXPECT_NE(c.error().message().find(needle), std::string::npos) << c.error().message();
    }
}

}  // namespace
}  // namespace tdm::test
