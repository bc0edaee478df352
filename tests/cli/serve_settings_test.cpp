// SPDX-License-Identifier: Apache-2.0
// tests/cli/serve_settings_test.cpp: what `tandem serve` takes from its command line into
// every request (--ignore-eos), and how requests name the speculative type it was started
// with (both spellings of a drafter, an empty name refused). Not the HTTP transport or the
// OpenAI shapes (serve_test.cpp).
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include "cli/cli_models.h"
#include "cli/cli_run.h"
#include "cli/serve_process.h"

namespace tdm {
namespace {

using nlohmann::json;

const std::string& model_serve_settings() {
    static const std::string d = test::make_temp_dir("serve-settings");
    return cli_test_model(d, "qwen3");
}

struct SettingsReply {
    int status = 0;
    json body;
    std::string raw;
};

SettingsReply post_completion(int port, const json& body) {
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(300);
    auto res = cli.Post("/v1/completions", body.dump(), "application/json");
    SettingsReply r;
    if (!res) return r;
    r.status = res->status;
    r.raw = res->body;
    r.body = json::parse(res->body, nullptr, false);
    return r;
}

// "Hello" on this model ends with an end-of-generation token after 42 tokens.
constexpr int kPastTheEnd = 64;

TEST(ServeSettings, ignore_eos_on_the_command_line_applies_to_every_request_unless_it_says_otherwise) {
    CliRun plain = tandem({"run", "-m", model_serve_settings(), "-p", "Hello", "-n", std::to_string(kPastTheEnd),
                           "--temp", "0", "--output-format", "json"});
    ASSERT_EQ(plain.status, 0) << plain.err;
    ASSERT_EQ(json::parse(plain.out)["stop_reason"], "eog") << "the model no longer stops early: pick another prompt";

    test::ServeProcess server({"-m", model_serve_settings(), "--temp", "0", "--ignore-eos"});
    ASSERT_TRUE(server.started()) << server.log();
    SettingsReply past = post_completion(server.port(), {{"prompt", "Hello"}, {"max_tokens", kPastTheEnd}});
    ASSERT_EQ(past.status, 200) << past.raw;
    EXPECT_EQ(past.body["usage"]["completion_tokens"], kPastTheEnd) << past.raw;
    EXPECT_EQ(past.body["choices"][0]["finish_reason"], "length");

    SettingsReply stops = post_completion(server.port(),
                                          {{"prompt", "Hello"}, {"max_tokens", kPastTheEnd}, {"ignore_eos", false}});
    ASSERT_EQ(stops.status, 200) << stops.raw;
    EXPECT_LT(stops.body["usage"]["completion_tokens"].get<int>(), kPastTheEnd) << stops.raw;
    EXPECT_EQ(stops.body["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(server.terminate(), 0) << server.log();
}

TEST(ServeSettings, a_request_names_the_servers_drafter_in_either_spelling_and_never_with_an_empty_name) {
    test::ServeProcess server({"-m", model_serve_settings(), "--temp", "0", "--spec-type", "ngram-simple"});
    ASSERT_TRUE(server.started()) << server.log();
    const json base = {{"prompt", "The cat sat on the"}, {"max_tokens", 8}, {"ignore_eos", true}};
    std::string text;
    for (const char* type : {"ngram-simple", "ngram_simple"}) {
        json body = base;
        body["speculative"] = {{"type", type}};
        SettingsReply r = post_completion(server.port(), body);
        ASSERT_EQ(r.status, 200) << type << ": " << r.raw;
        if (text.empty()) text = r.body["choices"][0]["text"];
        EXPECT_EQ(r.body["choices"][0]["text"], text) << type;
    }
    json unknown = base;
    unknown["speculative"] = {{"type", "ngram-mod"}};
    SettingsReply refused = post_completion(server.port(), unknown);
    EXPECT_EQ(refused.status, 400) << refused.raw;
    EXPECT_NE(refused.raw.find("loaded: ngram-simple"), std::string::npos) << refused.raw;

    json empty = base;
    empty["speculative"] = {{"type", ""}};
    SettingsReply r = post_completion(server.port(), empty);
    EXPECT_EQ(r.status, 400) << r.raw;
    EXPECT_EQ(r.body["error"]["param"], "speculative.type") << r.raw;
    EXPECT_NE(r.body["error"]["message"].get<std::string>().find("empty"), std::string::npos) << r.raw;
    EXPECT_EQ(server.terminate(), 0) << server.log();
}

TEST(ServeSettings, the_command_line_takes_a_drafter_in_either_spelling) {
    CliRun r = tandem({"run", "-m", model_serve_settings(), "-p", "The cat sat on the", "-n", "8", "--temp", "0",
                       "--ignore-eos", "--spec-type", "ngram_simple", "--output-format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(json::parse(r.out).contains("speculative")) << r.out;
}

}  // namespace
}  // namespace tdm
