// SPDX-License-Identifier: Apache-2.0
// tests/cli/serve_constraint_test.cpp: a request's output constraint through the serving
// backend (serve/serve_backend.h): the request's response_format becomes, with the
// backend's factory, the constraint of its session; the generation follows it and ends,
// finish_reason "stop", as soon as it is complete; a backend without a factory refuses the
// field with a 400. The factory here is the test's own (the grammar engine's is tested with
// the engine); the engine's side of constraints: tests/speculative/constrained_decoding_test.cpp.
#include <gtest/gtest.h>

#include <limits>

#include "cli/cli_models.h"
#include "serve/serve_backend.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "support/plugin_registry.h"

namespace tdm {
namespace {

const std::string& model_serve_constraint() {
    static const std::string d = test::make_temp_dir("serve-constraint");
    return cli_test_model(d, "qwen3");
}

// Even token ids only; complete after `length` tokens.
class EvenTokens final : public TokenConstraint {
public:
    explicit EvenTokens(uint32_t length) : length_(length) {}
    void mask(float* logits, int n_vocab) override {
        for (int t = 0; t < n_vocab; ++t)
            if (!allows(t)) logits[t] = -std::numeric_limits<float>::infinity();
    }
    bool allows(int32_t token) override { return token % 2 == 0 && n_ < length_; }
    Status advance(int32_t token) override {
        if (!allows(token)) return Error::format("token {} is odd", token);
        ++n_;
        return {};
    }
    bool complete() const override { return n_ >= length_; }
    std::unique_ptr<TokenConstraint> clone() const override { return std::make_unique<EvenTokens>(*this); }

private:
    uint32_t length_, n_ = 0;
};

constexpr uint32_t kLength = 5;

struct Served {
    std::unique_ptr<Model> model;
    std::unique_ptr<KvPool> kv;
    std::unique_ptr<Runner> runner;
    std::unique_ptr<server::ServeBackend> backend;
};

Served serve(ConstraintFactory factory) {
    Served s;
    auto m = Model::load(model_serve_constraint(), test::build_tree_plugins(), test::test_device());
    EXPECT_TRUE(m.ok()) << m.error().message();
    if (!m.ok()) return s;
    s.model = std::move(m).value();
    KvPoolConfig kc;
    kc.n_ctx = 128;
    kc.n_seq_max = 2;
    s.kv = std::move(KvPool::create(test::test_device(), s.model->attention_layers(), kc, "test")).value();
    s.runner = std::make_unique<Runner>(*s.model, *s.kv, test::test_device(), test::test_pipelines());
    server::ServeBackend::Setup setup;
    setup.model_id = "tiny";
    setup.runner = s.runner.get();
    setup.tokenizer = s.model->tokenizer();
    setup.defaults.max_tokens = -1;
    setup.defaults.sampling.temperature = 0;
    setup.defaults.ignore_eog = true;
    setup.constraints = std::move(factory);
    auto b = server::ServeBackend::create(std::move(setup));
    EXPECT_TRUE(b.ok()) << b.error().message();
    if (b.ok()) s.backend = std::move(b).value();
    return s;
}

server::GenerationRequest json_request() {
    auto r = server::parse_generation_request(server::Endpoint::completions,
                                              R"({"prompt": "Hello", "max_tokens": 20, )"
                                              R"("response_format": {"type": "json_object"}})");
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : server::GenerationRequest{};
}

class ServeConstraint : public test::DeviceTest {};

TEST_F(ServeConstraint, a_request_generates_what_its_constraint_allows_and_stops_when_it_is_complete) {
    ConstraintSpec asked;
    Served s = serve([&asked](const ConstraintSpec& spec) -> Result<std::unique_ptr<TokenConstraint>> {
        asked = spec;
        return std::unique_ptr<TokenConstraint>(std::make_unique<EvenTokens>(kLength));
    });
    ASSERT_TRUE(s.backend);
    auto job = s.backend->prepare(json_request());
    ASSERT_TRUE(job.ok()) << job.error().message;
    EXPECT_EQ(asked.kind, ConstraintSpec::Kind::json_object);
    ASSERT_NE(job->constraint, nullptr);
    auto out = s.backend->run(*job, [](uint32_t, std::string_view, const std::vector<server::TokenLogprob>*) {
        return true;
    });
    ASSERT_TRUE(out.ok()) << out.error().message;
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ(out->front().finish_reason, "stop");
    // unconstrained, it would run to max_tokens (the end-of-generation tokens are ignored)
    EXPECT_EQ(out->front().usage.completion_tokens, kLength) << "complete after kLength tokens, before max_tokens";
}

TEST_F(ServeConstraint, without_a_factory_a_constrained_request_is_refused_naming_the_field) {
    Served s = serve(ConstraintFactory{});
    ASSERT_TRUE(s.backend);
    auto job = s.backend->prepare(json_request());
    ASSERT_FALSE(job.ok());
    EXPECT_EQ(job.error().status, 400);
    EXPECT_EQ(job.error().param, "response_format");
}

}  // namespace
}  // namespace tdm
