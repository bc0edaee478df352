// SPDX-License-Identifier: Apache-2.0
// tests/serve/stop_strings_test.cpp
#include "serve/stop_strings.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

using tdm::server::StopMatcher;

namespace {

struct Streamed {
    std::string text;  // everything shown, flush included unless stopped
    bool stopped = false;
    std::string matched;
};

Streamed stream(const std::vector<std::string>& stops, const std::vector<std::string>& pieces) {
    StopMatcher m(stops);
    Streamed out;
    for (const std::string& p : pieces) {
        out.text += m.push(p);
        if (m.stopped()) break;
    }
    if (!m.stopped()) out.text += m.flush();
    out.stopped = m.stopped();
    out.matched = m.matched();
    return out;
}

// Generation stops after the first piece whose text so far holds a stop string; the output
// is that text up to the stop string's earliest occurrence.
Streamed reference(const std::vector<std::string>& stops, const std::vector<std::string>& pieces) {
    std::string text;
    for (const std::string& p : pieces) {
        text += p;
        size_t first = std::string::npos;
        for (const std::string& s : stops)
            if (!s.empty()) first = std::min(first, text.find(s));
        if (first != std::string::npos) return {text.substr(0, first), true, ""};
    }
    return {text, false, ""};
}

}  // namespace

TEST(StopMatcher, cuts_before_the_stop_string_and_reports_it) {
    const Streamed s = stream({"END"}, {"Hello ", "world", "END", "more"});
    EXPECT_TRUE(s.stopped);
    EXPECT_EQ(s.text, "Hello world");
    EXPECT_EQ(s.matched, "END");
}

TEST(StopMatcher, holds_back_a_possible_start_until_the_next_piece_decides) {
    StopMatcher m({"\n\n"});
    EXPECT_EQ(m.push("line one\n"), "line one");
    EXPECT_EQ(m.held(), 1u);
    EXPECT_EQ(m.push("line two"), "\nline two");  // not a stop after all: released
    EXPECT_EQ(m.push("\n"), "");
    EXPECT_EQ(m.push("\nafter"), "");
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(m.push("ignored"), "");
}

TEST(StopMatcher, a_stop_string_spread_over_many_pieces_is_never_shown_in_part) {
    StopMatcher m({"<|stop|>"});
    std::string shown;
    for (const char* piece : {"ok ", "<", "|", "st", "op", "|", ">", "tail"}) shown += m.push(piece);
    EXPECT_TRUE(m.stopped());
    EXPECT_EQ(shown, "ok ");
}

TEST(StopMatcher, the_earliest_match_wins_and_the_longest_at_one_place) {
    EXPECT_EQ(stream({"world", "lo"}, {"Hello world"}).text, "Hel");
    const Streamed s = stream({"END", "ENDING"}, {"the ENDING"});
    EXPECT_EQ(s.text, "the ");
    EXPECT_EQ(s.matched, "ENDING");
}

TEST(StopMatcher, without_a_stop_the_flush_releases_what_was_held) {
    StopMatcher m({"xyz"});
    EXPECT_EQ(m.push("abcx"), "abc");
    EXPECT_EQ(m.push("y"), "");
    EXPECT_EQ(m.flush(), "xy");
    EXPECT_FALSE(m.stopped());
    StopMatcher none({"", ""});
    EXPECT_EQ(none.push("anything"), "anything");
}

TEST(StopMatcher, multibyte_text_is_only_cut_between_characters) {
    const Streamed s = stream({"é!"}, {"caf", "é", "!", " no"});
    EXPECT_EQ(s.text, "caf");
    StopMatcher m({"éa"});
    EXPECT_EQ(m.push("xé"), "x");  // "é" is held whole, never half of it
    EXPECT_EQ(m.push("b"), "éb");
}

TEST(StopMatcher, random_streams_equal_the_piecewise_reference) {
    std::mt19937 rng(7);
    const std::string alphabet = "ab\nc";
    const auto random_string = [&](size_t max_len) {
        std::string s(1 + rng() % max_len, 'a');
        for (char& c : s) c = alphabet[rng() % alphabet.size()];
        return s;
    };
    for (int trial = 0; trial < 5000; ++trial) {
        std::vector<std::string> stops;
        for (size_t i = 0, n = rng() % 4; i < n; ++i) stops.push_back(random_string(4));
        std::vector<std::string> pieces;
        for (size_t i = 0, n = 1 + rng() % 8; i < n; ++i) pieces.push_back(random_string(3));

        const Streamed got = stream(stops, pieces);
        const Streamed want = reference(stops, pieces);
        ASSERT_EQ(got.text, want.text) << "trial " << trial;
        ASSERT_EQ(got.stopped, want.stopped) << "trial " << trial;

        // What is shown at any moment is a prefix of the final output.
        StopMatcher m(stops);
        std::string shown;
        for (const std::string& p : pieces) {
            shown += m.push(p);
            ASSERT_EQ(want.text.compare(0, shown.size(), shown), 0) << "trial " << trial;
            if (m.stopped()) break;
        }
    }
}
