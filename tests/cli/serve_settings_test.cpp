// SPDX-License-Identifier: Apache-2.0
// tests/cli/serve_settings_test.cpp: what `tandem serve` takes from its command line into
// every request (--ignore-eos). Not the HTTP transport or the OpenAI shapes (serve_test.cpp).
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

}  // namespace
}  // namespace tdm
