// SPDX-License-Identifier: Apache-2.0
// tests/cli/serve_draft_heads_test.cpp: a server's draft head chosen per request. With an
// EAGLE-3 head attached by -md and ngram-simple beside it, a request's speculative.type picks
// the head by any of its names ("eagle3", llama.cpp's "draft-eagle3", "draft" for what -md
// loaded), chains it with the n-gram drafter ("ngram-simple,eagle3") or turns drafting off
// ("none"); every greedy request gives plain decoding's text (and drafts, though a plain
// request computed its prompt first), also while another request
// with another type runs beside it; a type whose drafter is not loaded is a 400 naming what
// is. Two heads reading different target states (Qwen3.5's MTP head and an EAGLE-3 head)
// are refused when the drafters are made. A few short prompts: the test is about the
// choice of drafters, the heads' exactness is tests/models/eagle3's.
#include <gtest/gtest.h>
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <thread>

#include "cli/cli_models.h"
#include "cli/cli_run.h"
#include "cli/serve_process.h"

namespace tdm {
namespace {

using nlohmann::json;

const std::string kHeadsEnv = "TANDEM_LOG=off";

struct HeadFiles {
    std::string target, head;
};

// A 4-layer Llama target and an EAGLE-3 head (GGUF) for it, written once.
const HeadFiles& llama_with_eagle3() {
    static const HeadFiles f = [] {
        const std::string dir = test::make_temp_dir("serve-heads");
        HeadFiles h{dir + "/t.gguf", dir + "/head.gguf"};
        CliRun r = tandem({"synth", "--arch", "llama", "--layers", "4", "--type", "f16", "-o", h.target}, kHeadsEnv);
        EXPECT_EQ(r.status, 0) << r.err;
        r = tandem({"synth", "--arch", "eagle3", "--target", h.target, "-o", h.head}, kHeadsEnv);
        EXPECT_EQ(r.status, 0) << r.err;
        return h;
    }();
    return f;
}

struct HeadReply {
    int status = 0;
    json body;
    std::string raw;
    std::string text() const { return body.is_object() ? body["choices"][0].value("text", "") : ""; }
};

HeadReply complete(int port, const std::vector<int32_t>& prompt, const json& speculative) {
    json body = {{"prompt", prompt}, {"max_tokens", 12}, {"ignore_eos", true}};
    if (!speculative.is_null()) body["speculative"] = speculative;
    httplib::Client cli("127.0.0.1", port);
    cli.set_read_timeout(300);
    auto res = cli.Post("/v1/completions", body.dump(), "application/json");
    HeadReply r;
    if (!res) return r;
    r.status = res->status;
    r.raw = res->body;
    r.body = json::parse(res->body, nullptr, false);
    return r;
}

// tandem_spec_draft_tokens_total: the tokens drafted for every request so far.
uint64_t drafted_so_far(int port) {
    httplib::Client cli("127.0.0.1", port);
    auto res = cli.Get("/metrics");
    if (!res) return 0;
    const std::string key = "tandem_spec_draft_tokens_total ";
    const size_t at = res->body.find("\n" + key);
    return at == std::string::npos ? 0 : std::stoull(res->body.substr(at + 1 + key.size()));
}

const std::vector<int32_t> kPromptA = {2, 300, 17, 5, 90, 44, 81, 3, 3, 60, 12};
const std::vector<int32_t> kPromptB = {7, 7, 120, 9, 33, 120, 9, 33, 120, 9};

TEST(ServeDraftHeads, a_request_picks_the_head_by_any_of_its_names_chains_it_or_turns_it_off) {
    const HeadFiles& f = llama_with_eagle3();
    test::ServeProcess server({"-m", f.target, "-md", f.head, "--spec-type", "eagle3,ngram-simple", "--temp", "0",
                               "--parallel", "2"});
    ASSERT_TRUE(server.started()) << server.log();
    const json off = {{"draft_max", 0}};
    const HeadReply plain_a = complete(server.port(), kPromptA, off), plain_b = complete(server.port(), kPromptB, off);
    ASSERT_EQ(plain_a.status, 200) << plain_a.raw;
    ASSERT_EQ(plain_b.status, 200) << plain_b.raw;

    // each name drafts (fixed: the controller would not on lavapipe) and gives plain's text
    // (the first resumes the plain request's prompt: it computes it again for the head;
    // "eagle3" itself drafts below, and the other spellings are drafter_choice_test.cpp's)
    for (const char* type : {"draft-eagle3", "draft", "ngram-simple,eagle3"}) {
        const uint64_t before = drafted_so_far(server.port());
        const HeadReply r = complete(server.port(), kPromptA, {{"type", type}, {"draft_max", 3}, {"fixed", true}});
        ASSERT_EQ(r.status, 200) << type << ": " << r.raw;
        EXPECT_EQ(r.text(), plain_a.text()) << type;
        EXPECT_GT(drafted_so_far(server.port()), before) << type << " drafted nothing";
    }
    const uint64_t before = drafted_so_far(server.port());
    const HeadReply none = complete(server.port(), kPromptA, {{"type", "none"}, {"draft_max", 3}, {"fixed", true}});
    ASSERT_EQ(none.status, 200) << none.raw;
    EXPECT_EQ(none.text(), plain_a.text());
    EXPECT_EQ(drafted_so_far(server.port()), before);

    // the head for one request while the other drafts with the n-gram drafter alone, or not at all
    for (const char* other : {"ngram-simple", "none"}) {
        HeadReply a, b;
        std::thread with_head([&] {
            a = complete(server.port(), kPromptA, {{"type", "eagle3"}, {"draft_max", 3}, {"fixed", true}});
        });
        std::thread beside([&] {
            b = complete(server.port(), kPromptB, {{"type", other}, {"draft_max", 3}, {"fixed", true}});
        });
        with_head.join();
        beside.join();
        ASSERT_EQ(a.status, 200) << a.raw;
        ASSERT_EQ(b.status, 200) << b.raw;
        EXPECT_EQ(a.text(), plain_a.text()) << "beside " << other;
        EXPECT_EQ(b.text(), plain_b.text()) << other;
    }

    for (const char* type : {"dflash", "mtp", "eagle3,eagle3", "eagle3,,ngram-simple"}) {
        const HeadReply r = complete(server.port(), kPromptA, {{"type", type}});
        EXPECT_EQ(r.status, 400) << type << ": " << r.raw;
        EXPECT_EQ(r.body["error"]["param"], "speculative.type") << r.raw;
    }
    const HeadReply refused = complete(server.port(), kPromptA, {{"type", "dflash"}});
    EXPECT_NE(refused.raw.find("loaded: eagle3 (also draft-eagle3, draft), ngram-simple"), std::string::npos)
        << refused.raw;
    EXPECT_EQ(server.terminate(), 0) << server.log();
}

TEST(ServeDraftHeads, two_heads_reading_different_target_states_are_refused_with_both_names) {
    const std::string dir = test::make_temp_dir("serve-heads-two");
    const std::string& target = cli_test_model(dir, "qwen35");  // it carries an MTP head
    const std::string head = dir + "/head.gguf";
    CliRun r = tandem({"synth", "--arch", "eagle3", "--target", target, "-o", head}, kHeadsEnv);
    ASSERT_EQ(r.status, 0) << r.err;
    r = tandem({"run", "-m", target, "--spec-type", "mtp,eagle3", "-md", head, "-p", "Hi", "-n", "2"}, kHeadsEnv);
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("the draft heads mtp and eagle3 read different target states")) << r.err;
}

}  // namespace
}  // namespace tdm
