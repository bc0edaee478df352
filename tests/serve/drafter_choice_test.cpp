// SPDX-License-Identifier: Apache-2.0
// tests/serve/drafter_choice_test.cpp: which of a server's loaded drafters a request's
// speculative.type names (serve/drafter_choice.h): a drafter by its own name or any name it
// answers to, in either spelling; several, in the request's order; refusals that name what
// is loaded. To add a case: a chain of NamedDrafters and the type a request would send.
#include <gtest/gtest.h>

#include "serve/drafter_choice.h"

namespace tdm {
namespace {

class NamedDrafter final : public Drafter {
public:
    explicit NamedDrafter(std::string name) : name_(std::move(name)) {}
    const std::string& name() const override { return name_; }
    Status begin(std::span<const int32_t>) override { return {}; }
    Result<std::vector<int32_t>> draft(const DraftRequest&) override { return std::vector<int32_t>{}; }
    Status accept(std::span<const int32_t>, uint32_t, uint32_t) override { return {}; }

private:
    std::string name_;
};

struct LoadedChain {
    NamedDrafter head{"eagle3"}, ngram{"ngram_simple"};
    std::vector<Drafter*> order{&head, &ngram};
    // the head came from -md; the n-gram drafter answers to its --spec-type spelling
    std::vector<std::vector<std::string>> types{{"eagle3", "draft-eagle3", "draft"}, {"ngram-simple"}};
};

TEST(DrafterChoice, a_drafter_is_named_by_any_of_its_names_in_either_spelling) {
    LoadedChain c;
    for (const char* type : {"eagle3", "draft-eagle3", "draft_eagle3", "draft"}) {
        auto picks = choose_drafters(c.order, c.types, type);
        ASSERT_TRUE(picks.ok()) << type << ": " << picks.error().message();
        EXPECT_EQ(*picks, std::vector<size_t>{0}) << type;
    }
    for (const char* type : {"ngram-simple", "ngram_simple"}) {
        auto picks = choose_drafters(c.order, c.types, type);
        ASSERT_TRUE(picks.ok()) << type << ": " << picks.error().message();
        EXPECT_EQ(*picks, std::vector<size_t>{1}) << type;
    }
}

TEST(DrafterChoice, several_names_chain_their_drafters_in_the_requests_order) {
    LoadedChain c;
    auto picks = choose_drafters(c.order, c.types, "ngram-simple, draft-eagle3");
    ASSERT_TRUE(picks.ok()) << picks.error().message();
    EXPECT_EQ(*picks, (std::vector<size_t>{1, 0}));
}

TEST(DrafterChoice, unknown_repeated_and_empty_names_are_refused_naming_what_is_loaded) {
    LoadedChain c;
    auto unknown = choose_drafters(c.order, c.types, "dflash");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().message(),
              "drafter 'dflash' is not loaded in this server (loaded: eagle3 (also draft-eagle3, draft), ngram-simple)");
    auto twice = choose_drafters(c.order, c.types, "eagle3,draft");
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.error().message().find("names the drafter eagle3 twice"), std::string::npos)
        << twice.error().message();
    EXPECT_FALSE(choose_drafters(c.order, c.types, "eagle3,").ok());
    auto none_loaded = choose_drafters({}, {}, "mtp");
    ASSERT_FALSE(none_loaded.ok());
    EXPECT_NE(none_loaded.error().message().find("it runs without drafters"), std::string::npos);
}

}  // namespace
}  // namespace tdm
