// SPDX-License-Identifier: Apache-2.0
// tests/cli/option_checks_test.cpp: option values checked against what their consumers
// hold (ranges, choices) in the parser and in tandem's own table, and the checks of
// merged_config: conflicting options, plugin directories, config rules named by the option
// typed, the [model] path key and --no-chat. In process: parse_args + merged_config.
//
// To add a case: words() with the tandem command line (a --config file is added so the
// user's own config never leaks in), then fails_with on parse or merged.
#include "cli/commands.h"
#include "cli/option_checks.h"
#include "cli_test_spec.h"

#include "formats/expect_error.h"
#include "serve/generation_settings.h"
#include "support/fixtures.h"

#include <gtest/gtest.h>

#include <fstream>
#include <limits>

namespace tdm::test {
namespace {

using cli::ValueKind;

std::string write_config(const std::string& name, const std::string& text) {
    static const std::string dir = make_temp_dir("option-checks");
    const std::string p = dir + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

cli::EnvLookup no_env() {
    return [](const std::string&) -> std::optional<std::string> { return std::nullopt; };
}

// tandem's own table, with an empty config file unless the words name one.
Result<cli::ParsedArgs> parse_option_checks(std::vector<std::string> words) {
    if (std::find(words.begin(), words.end(), "--config") == words.end()) {
        words.push_back("--config");
        words.push_back(write_config("empty.toml", ""));
    }
    return cli::parse_args(cli::program_spec(), words, no_env());
}

Result<Config> merged(std::vector<std::string> words) {
    auto a = parse_option_checks(std::move(words));
    if (!a.ok()) return a.take_error();
    // merged_config keeps no reference to the arguments
    return cli::merged_config(*a);
}

// ---------------------------------------------------------------------------------------
// The parser: ranges and choices
// ---------------------------------------------------------------------------------------

cli::ProgramSpec spec_with(cli::OptionSpec o) {
    cli::ProgramSpec s = demo_spec();
    s.commands[0].groups[0].options.push_back(std::move(o));
    return s;
}

TEST(OptionValues, an_integer_outside_its_range_is_refused_with_the_range_never_wrapped) {
    cli::OptionSpec o{{"--n-ctx"}, ValueKind::integer, "N", "Context."};
    o.min_value = 0;
    o.max_value = std::numeric_limits<int32_t>::max();
    const cli::ProgramSpec s = spec_with(o);
    ASSERT_TRUE(cli::check_spec(s).ok());
    auto run = [&](std::vector<std::string> w, const cli::EnvLookup& env = no_env()) {
        return cli::parse_args(s, w, env);
    };
    auto ok = run({"run", "-m", "x", "--n-ctx", "2147483647"});
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ(ok->get_int("n-ctx"), 2147483647);
    EXPECT_TRUE(fails_with(run({"run", "-m", "x", "--n-ctx", "4294967296"}),
                           "--n-ctx: 4294967296 is out of range (allowed: 0 to 2147483647)"));
    EXPECT_TRUE(fails_with(run({"run", "-m", "x", "--n-ctx=-1"}), "--n-ctx: -1 is out of range (allowed: 0 to"));
    // the environment goes through the same check, named by the variable
    cli::OptionSpec e = o;
    e.env = "N_CTX";
    const cli::ProgramSpec se = spec_with(e);
    const cli::EnvLookup env = [](const std::string& n) -> std::optional<std::string> {
        if (n == "N_CTX") return std::string("2147483648");
        return std::nullopt;
    };
    EXPECT_TRUE(fails_with(cli::parse_args(se, std::vector<std::string>{"run", "-m", "x"}, env),
                           "N_CTX: 2147483648 is out of range"));
}

TEST(OptionValues, every_item_of_a_size_list_is_range_checked) {
    cli::OptionSpec o{{"--ids"}, ValueKind::size_list, "IDS", "Ids."};
    o.min_value = 0;
    o.max_value = 100;
    const cli::ProgramSpec s = spec_with(o);
    EXPECT_TRUE(cli::parse_args(s, std::vector<std::string>{"run", "-m", "x", "--ids", "0,100"}, no_env()).ok());
    EXPECT_TRUE(fails_with(cli::parse_args(s, std::vector<std::string>{"run", "-m", "x", "--ids", "1,101"}, no_env()),
                           "--ids: 101 in the list is out of range (allowed: 0 to 100)"));
}

TEST(OptionValues, a_word_outside_the_choices_is_refused_with_the_list_and_a_suggestion) {
    cli::OptionSpec o{{"--format"}, ValueKind::string, "FMT", "Format.", "text"};
    o.choices = {"text", "json"};
    const cli::ProgramSpec s = spec_with(o);
    EXPECT_TRUE(cli::parse_args(s, std::vector<std::string>{"run", "-m", "x", "--format", "json"}, no_env()).ok());
    EXPECT_TRUE(fails_with(cli::parse_args(s, std::vector<std::string>{"run", "-m", "x", "--format", "xml"}, no_env()),
                           "--format: 'xml' is not one of: text, json"));
    EXPECT_TRUE(fails_with(cli::parse_args(s, std::vector<std::string>{"run", "-m", "x", "--format", "jsno"}, no_env()),
                           "(did you mean 'json'?)"));
    EXPECT_TRUE(fails_with(cli::parse_args(s, std::vector<std::string>{"run", "-m", "x", "--format", ""}, no_env()),
                           "'' is not one of"));
}

TEST(OptionValues, check_spec_refuses_ranges_and_choices_that_cannot_hold) {
    cli::OptionSpec bad_default{{"--k"}, ValueKind::integer, "N", "", "-3"};
    bad_default.min_value = 0;
    EXPECT_TRUE(fails_with(cli::check_spec(spec_with(bad_default)), "default: -3 is out of range"));
    cli::OptionSpec empty{{"--k"}, ValueKind::integer};
    empty.min_value = 5;
    empty.max_value = 4;
    EXPECT_TRUE(fails_with(cli::check_spec(spec_with(empty)), "an empty range"));
    cli::OptionSpec ranged_text{{"--k"}, ValueKind::string};
    ranged_text.max_value = 4;
    EXPECT_TRUE(fails_with(cli::check_spec(spec_with(ranged_text)), "only integer options have a range"));
    cli::OptionSpec int_choices{{"--k"}, ValueKind::integer};
    int_choices.choices = {"1"};
    EXPECT_TRUE(fails_with(cli::check_spec(spec_with(int_choices)), "only string options have choices"));
    cli::OptionSpec default_not_a_choice{{"--k"}, ValueKind::string, "", "", "xml"};
    default_not_a_choice.choices = {"text", "json"};
    EXPECT_TRUE(fails_with(cli::check_spec(spec_with(default_not_a_choice)), "'xml' is not one of"));
}

// ---------------------------------------------------------------------------------------
// tandem's table
// ---------------------------------------------------------------------------------------

TEST(TandemOptions, every_integer_option_states_the_range_its_consumer_holds) {
    const cli::ProgramSpec& spec = cli::program_spec();
    ASSERT_TRUE(cli::check_spec(spec).ok());
    std::vector<const cli::OptionGroup*> groups;
    for (const auto& g : spec.global) groups.push_back(&g);
    for (const auto& c : spec.commands)
        for (const auto& g : c.groups) groups.push_back(&g);
    int checked = 0;
    for (const cli::OptionGroup* g : groups)
        for (const cli::OptionSpec& o : g->options) {
            if (o.kind != ValueKind::integer && o.kind != ValueKind::size_list) continue;
            ++checked;
            EXPECT_NE(o.min_value, std::numeric_limits<int64_t>::min()) << o.names.back() << " has no lower bound";
            if (o.names.back() != "--seed" && o.names.back() != "--draft-of-seed") {  // seeds are 64-bit
                EXPECT_LE(o.max_value, std::numeric_limits<int32_t>::max()) << o.names.back();
            }
        }
    EXPECT_GT(checked, 20);
    int enums = 0;
    for (const cli::OptionGroup* g : groups)
        for (const cli::OptionSpec& o : g->options)
            for (const char* n : {"--output-format", "--kv-type", "--mtp-hidden", "--log-level", "--prompt-kind"})
                if (o.names.back() == n) {
                    ++enums;
                    EXPECT_FALSE(o.choices.empty()) << n << " accepts any word";
                }
    EXPECT_GE(enums, 9);
}

TEST(TandemOptions, values_that_used_to_wrap_at_32_bits_are_refused) {
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "-c", "4294967296"}), "-c: 4294967296 is out of range (allowed: 0 to 2147483647)"));
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "-c", "2147483648"}), "-c: 2147483648 is out of range"));
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "-n", "4294967296"}), "-n: 4294967296 is out of range (allowed: -1 to"));
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "--top-k", "4294967296"}), "--top-k: 4294967296 is out of range"));
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "-b", "0"}), "-b: 0 is out of range (allowed: 1 to"));
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "--draft-max", "5000"}), "--draft-max: 5000 is out of range (allowed: 1 to 1024)"));
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "--prompt-tokens", "1,4294967296"}), "4294967296 in the list is out of range"));
    EXPECT_TRUE(fails_with(parse_option_checks({"bench", "ops", "--iterations", "0"}), "--iterations: 0 is out of range"));
    EXPECT_TRUE(fails_with(parse_option_checks({"synth", "-o", "x", "--layers", "4096"}), "--layers: 4096 is out of range (allowed: 1 to 1024)"));
}

TEST(TandemOptions, n_predict_takes_minus_one_for_unlimited_and_refuses_other_negatives) {
    auto a = parse_option_checks({"run", "-n", "-1"});
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ(a->get_int("n-predict"), -1);
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "-n", "-5"}), "-n: -5 is out of range (allowed: -1 to 2147483647)"));
}

TEST(TandemOptions, unknown_enum_words_are_refused_with_the_accepted_ones) {
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "--output-format", "xml"}), "'xml' is not one of: text, json"));
    for (const char* cmd : {"info", "tokenize", "plugins", "devices"})
        EXPECT_TRUE(fails_with(parse_option_checks({cmd, "--output-format", "yaml"}), "is not one of: text, json")) << cmd;
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "--kv-type", "q8_0"}), "--kv-type: 'q8_0' is not one of: f16, f32"));
    EXPECT_TRUE(fails_with(parse_option_checks({"run", "--mtp-hidden", "prenorm"}), "is not one of: post-norm, pre-norm"));
    EXPECT_TRUE(fails_with(parse_option_checks({"bench", "spec", "--prompt-kind", "lists"}), "is not one of: random, zipf, listing, list"));
    EXPECT_TRUE(fails_with(parse_option_checks({"devices", "--log-level", "verbose"}), "is not one of: trace, debug, info"));
}

// ---------------------------------------------------------------------------------------
// merged_config
// ---------------------------------------------------------------------------------------

TEST(MergedConfig, options_that_would_silently_override_each_other_are_refused) {
    EXPECT_TRUE(fails_with(merged({"run", "-p", "a", "-f", "b"}), "-p and -f both give the prompt"));
    EXPECT_TRUE(fails_with(merged({"run", "--prompt-tokens", "1,2", "-p", "a"}), "-p and --prompt-tokens both give"));
    EXPECT_TRUE(fails_with(merged({"run", "-f", "x", "--prompt-tokens", "1"}), "-f and --prompt-tokens"));
    EXPECT_TRUE(fails_with(merged({"run", "-c", "64", "--kv-memory", "1MiB"}), "-c and --kv-memory both size the context"));
    EXPECT_TRUE(fails_with(merged({"run", "--chat", "--no-chat"}), "contradict each other"));
    EXPECT_TRUE(fails_with(merged({"run", "--spec-type", ""}), "--spec-type: no drafter named"));
    EXPECT_TRUE(fails_with(merged({"run", "--spec-type", " , "}), "--spec-type: no drafter named"));
    EXPECT_TRUE(fails_with(merged({"run", "--spec-type", "ngram-simple,,draft"}), "has an empty name in the list"));
    // one of each is fine
    EXPECT_TRUE(merged({"run", "-p", "a", "-c", "64"}).ok());
}

TEST(MergedConfig, a_context_below_one_kv_block_is_refused_naming_the_option) {
    EXPECT_TRUE(fails_with(merged({"run", "-c", "1"}), "-c (model.n_ctx): 1 is below the minimum 16 (one KV block"));
    EXPECT_TRUE(fails_with(merged({"run", "--ctx-size", "15"}), "--ctx-size (model.n_ctx): 15 is below the minimum 16"));
    auto zero = merged({"run", "-c", "0"});
    ASSERT_TRUE(zero.ok()) << zero.error().message();
    EXPECT_EQ(zero->model.n_ctx, 0);
    auto sixteen = merged({"run", "-c", "16"});
    ASSERT_TRUE(sixteen.ok()) << sixteen.error().message();
    EXPECT_EQ(sixteen->model.n_ctx, 16);
}

TEST(MergedConfig, draft_min_above_draft_max_names_the_option) {
    EXPECT_TRUE(fails_with(merged({"run", "--draft-max", "4", "--draft-min", "5"}),
                           "--draft-min (speculative.draft_min): draft_min (5) is larger than draft_max (4)"));
}

TEST(MergedConfig, the_goodput_controller_chooses_the_draft_length_by_default_in_every_command) {
    // What run, chat, serve and bench spec hand the engine (spec_params): the controller,
    // within --draft-max, unless fixed k is asked for by flag or config key.
    const std::vector<std::vector<std::string>> commands = {
        {"run", "-m", "x.gguf", "-p", "a"}, {"chat", "-m", "x.gguf"}, {"serve", "-m", "x.gguf"},
        {"bench", "spec", "-m", "x.gguf"}};
    for (const auto& words : commands) {
        auto c = merged(words);
        ASSERT_TRUE(c.ok()) << words[0] << ": " << c.error().message();
        EXPECT_FALSE(c->speculative.fixed) << words[0];
        EXPECT_TRUE(spec_params(*c).auto_k) << words[0];
        EXPECT_EQ(spec_params(*c).draft_max, 16) << words[0];
        std::vector<std::string> fixed = words;
        fixed.push_back("--spec-fixed");
        auto f = merged(fixed);
        ASSERT_TRUE(f.ok()) << words[0] << ": " << f.error().message();
        EXPECT_FALSE(spec_params(*f).auto_k) << words[0];
    }
    std::vector<std::string> from_file = {"run", "-m", "x.gguf", "-p", "a", "--config",
                                          write_config("fixed.toml", "[speculative]\nfixed = true\ndraft_max = 3\n")};
    auto f = merged(from_file);
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_FALSE(spec_params(*f).auto_k);
    EXPECT_EQ(spec_params(*f).draft_max, 3);
    // --spec-auto keeps its meaning (the carried head without --spec-type) and the controller
    auto a = merged({"run", "-m", "x.gguf", "-p", "a", "--spec-auto"});
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_TRUE(a->speculative.auto_select);
    EXPECT_TRUE(spec_params(*a).auto_k);
}

TEST(MergedConfig, a_missing_plugin_directory_is_refused) {
    EXPECT_TRUE(fails_with(merged({"plugins", "--plugin-path", "/nonexistent/tandem-plugins"}),
                           "--plugin-path: directory '/nonexistent/tandem-plugins' does not exist"));
    const std::string file = write_config("not-a-dir", "x");
    EXPECT_TRUE(fails_with(merged({"plugins", "--plugin-path", file}), "is not a directory"));
    const std::string cfg = write_config("paths.toml", "[plugins]\npaths = [\"/nonexistent/p\"]\n");
    EXPECT_TRUE(fails_with(merged({"--config", cfg, "plugins"}), "[plugins] paths: directory '/nonexistent/p' does not"));
    EXPECT_TRUE(merged({"plugins", "--plugin-path", make_temp_dir("plugin-dir")}).ok());
}

TEST(MergedConfig, model_path_and_chat_come_from_the_config_file_and_the_command_line_overrides_them) {
    const std::string cfg = write_config("model.toml", "[model]\npath = \"from-config.gguf\"\nchat = true\n");
    auto c = merged({"--config", cfg, "run"});
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->model.path, "from-config.gguf");
    EXPECT_TRUE(c->model.chat);
    c = merged({"--config", cfg, "run", "-m", "typed.gguf", "--no-chat"});
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->model.path, "typed.gguf");
    EXPECT_FALSE(c->model.chat);
    // run no longer insists on -m at parse time: the config can name the model
    EXPECT_TRUE(parse_option_checks({"run", "-p", "hi"}).ok());
}

TEST(MergedConfig, toml_integers_beyond_their_setting_are_refused_with_the_limit_never_wrapped) {
    const std::string big = write_config("big.toml", "[sampling]\ntop_k = 4294967296\n");
    EXPECT_TRUE(fails_with(merged({"--config", big, "run"}),
                           "key 'sampling.top_k' at line 2: 4294967296 is out of range (the largest value this "
                           "setting holds is 2147483647)"));
    const std::string small = write_config("small.toml", "[model]\nn_ctx = -4294967296\n");
    EXPECT_TRUE(fails_with(merged({"--config", small, "run"}), "the smallest value this setting holds is -2147483648"));
    const std::string one = write_config("one.toml", "[model]\nn_ctx = 1\n");
    EXPECT_TRUE(fails_with(merged({"--config", one, "run"}), "key 'model.n_ctx' at line 2: 1 is below the minimum 16"));
    const std::string draft = write_config("draft.toml", "[speculative]\ndraft_max = 2000\n");
    EXPECT_TRUE(fails_with(merged({"--config", draft, "run"}), "2000 is above the maximum 1024"));
    const std::string both = write_config("both.toml", "[model]\nkv_memory = \"1GiB\"\n");
    // a file's budget and a typed -c: the command line wins, as documented
    auto c = merged({"--config", both, "run", "-c", "64"});
    ASSERT_TRUE(c.ok()) << c.error().message();
    EXPECT_EQ(c->model.kv_memory, 0u);
    EXPECT_EQ(c->model.n_ctx, 64);
}

// ---------------------------------------------------------------------------------------
// --plugin-disable
// ---------------------------------------------------------------------------------------

TEST(PluginDisable, names_that_match_no_plugin_are_reported_with_the_plugins_found) {
    EXPECT_EQ(cli::unknown_disabled_plugins({"ngram"}, {"qwen-nextn", "ngram"}), "");
    const std::string msg = cli::unknown_disabled_plugins({"ngrm", "ngram"}, {"qwen-nextn", "ngram", "ngram"});
    EXPECT_NE(msg.find("no plugin named 'ngrm' was found (plugins found: ngram, qwen-nextn)"), std::string::npos) << msg;
    EXPECT_NE(cli::unknown_disabled_plugins({"x"}, {}).find("plugins found: none"), std::string::npos);
}

}  // namespace
}  // namespace tdm::test
