// SPDX-License-Identifier: Apache-2.0
// tests/config/default_config_test.cpp: the shipped default tandem.toml and docs/CONFIG.md
// stay in step with the schema: the file loads, uncommenting it changes nothing, and both
// mention every key. Adding a key to the loader without documenting it fails here.
#include "config/config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

namespace tdm::test {
namespace {

// Every "# key = value" line with the "# " removed (prose comments stay comments).
std::string uncomment_keys(std::string_view text) {
    static const std::regex kKeyLine(R"(^# ([a-z_]+ = .*)$)");
    std::istringstream in{std::string(text)};
    std::string out;
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        out += std::regex_match(line, m, kKeyLine) ? m[1].str() : line;
        out += '\n';
    }
    return out;
}

TEST(DefaultConfig, loads_cleanly_and_changes_nothing) {
    auto c = load_config_text(default_config_text(), "default tandem.toml");
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(*c, Config{});
}

TEST(DefaultConfig, uncommented_it_sets_every_key_to_its_default) {
    const std::string text = uncomment_keys(default_config_text());
    ASSERT_NE(text, default_config_text());
    auto c = load_config_text(text, "uncommented");
    ASSERT_TRUE(c.ok()) << c.error().message();
    // The chat template parts have no default (unset = the template's own); the file
    // shows ChatML's as an example, which must load as given.
    EXPECT_EQ(c->chat_template.user_prefix, "<|im_start|>user\n");
    EXPECT_EQ(c->chat_template.generation_prompt, "<|im_start|>assistant\n");
    Config got = *c;
    got.chat_template = {};
    EXPECT_EQ(got, Config{});
}

TEST(DefaultConfig, lists_every_key_under_its_section) {
    const std::string text(default_config_text());
    for (const std::string& full : config_keys()) {
        const std::string section = full.substr(0, full.find('.'));
        const std::string key = full.substr(full.find('.') + 1);
        const size_t header = text.find("\n[" + section + "]\n");
        ASSERT_NE(header, std::string::npos) << section;
        const size_t next = text.find("\n[", header + 1);
        const size_t at = text.find("\n# " + key + " = ", header);
        EXPECT_TRUE(at != std::string::npos && at < next) << full << " missing from the default config";
    }
}

TEST(DefaultConfig, docs_config_md_documents_every_key) {
    std::ifstream in(std::string(TANDEM_SOURCE_DIR) + "/docs/CONFIG.md");
    ASSERT_TRUE(in) << "docs/CONFIG.md not found";
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string doc = ss.str();
    // Each key appears as a table row "| `key` |" under the section's heading "## [section]".
    for (const std::string& full : config_keys()) {
        const std::string section = full.substr(0, full.find('.'));
        const std::string key = full.substr(full.find('.') + 1);
        const size_t heading = doc.find("\n## [" + section + "]");
        ASSERT_NE(heading, std::string::npos) << "no heading for [" << section << "]";
        const size_t next = doc.find("\n## ", heading + 1);
        const size_t at = doc.find("| `" + key + "` |", heading);
        EXPECT_TRUE(at != std::string::npos && at < next) << full << " is not documented in docs/CONFIG.md";
    }
}

}  // namespace
}  // namespace tdm::test
