// SPDX-License-Identifier: Apache-2.0
// tests/cli/args_test.cpp: parsing against a ProgramSpec (spellings, values, defaults,
// environment, repeats, positionals) and the rejection of bad command lines and bad specs.
// To add a case: call parse() with the words after the program name and check the values,
// or check the error with fails_with.
#include "cli_test_spec.h"

#include "formats/expect_error.h"

#include <gtest/gtest.h>

#include <map>

namespace tdm::test {
namespace {

using cli::Origin;
using cli::ParsedArgs;
using cli::ValueKind;

std::map<std::string, std::string> g_env;  // the environment the parser sees, per test

cli::EnvLookup fake_env() {
    return [](const std::string& name) -> std::optional<std::string> {
        auto it = g_env.find(name);
        if (it == g_env.end()) return std::nullopt;
        return it->second;
    };
}

class Args : public ::testing::Test {
protected:
    void SetUp() override { g_env.clear(); }
};

Result<ParsedArgs> parse(std::vector<std::string> words, const cli::ProgramSpec& spec = demo_spec()) {
    return cli::parse_args(spec, words, fake_env());
}

ParsedArgs parse_ok(std::vector<std::string> words) {
    auto r = parse(std::move(words));
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message());
    return r.ok() ? std::move(r).value() : ParsedArgs{};
}

// ---------------------------------------------------------------------------------------
// Accepted command lines
// ---------------------------------------------------------------------------------------

TEST_F(Args, parses_short_long_and_multi_letter_spellings) {
    const ParsedArgs a = parse_ok({"run", "-m", "t.gguf", "-md", "d.gguf", "-c", "8192", "--temp", "0.5", "-cnv", "hi"});
    EXPECT_EQ(a.command(), "run");
    EXPECT_EQ(a.get_string("model"), "t.gguf");
    EXPECT_EQ(a.get_string("model-draft"), "d.gguf");
    EXPECT_EQ(a.get_int("ctx-size"), 8192);
    EXPECT_EQ(a.get_number("temp"), 0.5);
    EXPECT_TRUE(a.flag("conversation"));
    EXPECT_FALSE(a.flag("verbose"));
    EXPECT_EQ(a.positionals(), (std::vector<std::string>{"hi"}));
}

TEST_F(Args, a_multi_letter_spelling_is_never_split) {
    // "-md" is its own option, not "-m" with the value "d" ...
    const ParsedArgs a = parse_ok({"run", "-md", "d.gguf", "-m", "t.gguf"});
    EXPECT_EQ(a.get_string("model"), "t.gguf");
    // ... and "-mt.gguf" is not "-m t.gguf".
    EXPECT_TRUE(fails_with(parse({"run", "-mt.gguf"}), "unknown option '-mt.gguf'"));
}

TEST_F(Args, long_options_take_equals_values) {
    const ParsedArgs a = parse_ok({"run", "--model=a=b.gguf", "--temp=0.25", "--ctx-size=0"});
    EXPECT_EQ(a.get_string("model"), "a=b.gguf");  // split at the first '='
    EXPECT_EQ(a.get_number("temp"), 0.25);
    EXPECT_EQ(a.get_int("ctx-size"), 0);
    EXPECT_EQ(parse_ok({"run", "-m", "x", "--model-draft="}).get_string("model-draft"), "");
}

TEST_F(Args, the_next_argument_is_the_value_whatever_it_looks_like) {
    const ParsedArgs a = parse_ok({"run", "-m", "--temp", "-s", "-1"});
    EXPECT_EQ(a.get_string("model"), "--temp");
    EXPECT_EQ(a.get_int("seed"), -1);
    EXPECT_EQ(a.origin("temp"), Origin::default_value);
}

TEST_F(Args, negative_numbers_and_a_lone_dash_are_positionals) {
    EXPECT_EQ(parse_ok({"run", "-m", "x", "-5"}).positionals(), (std::vector<std::string>{"-5"}));
    EXPECT_EQ(parse_ok({"run", "-m", "x", "-"}).positionals(), (std::vector<std::string>{"-"}));
}

TEST_F(Args, double_dash_ends_the_options) {
    const ParsedArgs a = parse_ok({"run", "-m", "x", "--", "--temp"});
    EXPECT_EQ(a.positionals(), (std::vector<std::string>{"--temp"}));
    EXPECT_EQ(a.origin("temp"), Origin::default_value);
    EXPECT_FALSE(parse_ok({"run", "-m", "x", "--", "-h"}).help_requested());
}

TEST_F(Args, defaults_fill_options_not_given_and_say_so) {
    const ParsedArgs a = parse_ok({"run", "-m", "x"});
    EXPECT_EQ(a.get_int("ctx-size"), 4096);
    EXPECT_EQ(a.get_number("temp"), 0.8);
    EXPECT_EQ(a.get_bool("validate"), false);
    EXPECT_EQ(a.get_string("log-level"), "warn");
    EXPECT_EQ(a.origin("ctx-size"), Origin::default_value);
    EXPECT_FALSE(a.has("ctx-size"));
    EXPECT_EQ(a.get_string("model-draft"), std::nullopt);  // no default
    EXPECT_EQ(a.origin("model-draft"), Origin::absent);
    EXPECT_TRUE(a.has("model"));
    EXPECT_EQ(a.origin("model"), Origin::command_line);
    EXPECT_EQ(a.source_name("model"), "-m");
    EXPECT_EQ(a.source_name("ctx-size"), "--ctx-size");
}

TEST_F(Args, options_of_another_command_read_as_absent) {
    const ParsedArgs a = parse_ok({"run", "-m", "x"});
    EXPECT_EQ(a.origin("repetitions"), Origin::absent);
    EXPECT_EQ(a.get_int("repetitions"), std::nullopt);
}

TEST_F(Args, a_repeated_option_keeps_the_last_value_unless_repeatable) {
    const ParsedArgs a = parse_ok({"run", "-m", "x", "-c", "1", "--ctx-size", "2", "--spec-type", "mtp",
                                   "--spec-type=ngram-simple"});
    EXPECT_EQ(a.get_int("ctx-size"), 2);
    EXPECT_EQ(a.values("ctx-size").size(), 1u);
    EXPECT_EQ(a.get_strings("spec-type"), (std::vector<std::string>{"mtp", "ngram-simple"}));
    EXPECT_EQ(a.get_string("spec-type"), "ngram-simple");
}

TEST_F(Args, global_options_work_before_and_after_the_command) {
    EXPECT_EQ(parse_ok({"--config", "a.toml", "run", "-m", "x"}).get_string("config"), "a.toml");
    EXPECT_EQ(parse_ok({"run", "-m", "x", "--config", "b.toml", "-v"}).get_string("config"), "b.toml");
    EXPECT_TRUE(parse_ok({"-v", "bench"}).flag("verbose"));
}

TEST_F(Args, environment_variables_fill_in_below_the_command_line) {
    g_env = {{"TANDEM_MODEL", "env.gguf"}, {"TANDEM_CTX_SIZE", "2048"}};
    const ParsedArgs a = parse_ok({"run"});
    EXPECT_EQ(a.get_string("model"), "env.gguf");
    EXPECT_EQ(a.origin("model"), Origin::environment);
    EXPECT_EQ(a.source_name("model"), "TANDEM_MODEL");
    EXPECT_TRUE(a.has("ctx-size"));
    EXPECT_EQ(a.get_int("ctx-size"), 2048);
    EXPECT_EQ(parse_ok({"run", "-c", "16"}).get_int("ctx-size"), 16);  // the command line wins
    g_env = {{"TANDEM_MODEL", ""}};  // set but empty counts as unset
    EXPECT_TRUE(fails_with(parse({"run"}), "missing required option -m, --model"));
}

TEST_F(Args, typed_values_parse_strictly) {
    EXPECT_EQ(parse_ok({"run", "-m", "x", "--temp", "1e-3"}).get_number("temp"), 1e-3);
    EXPECT_EQ(parse_ok({"run", "-m", "x", "--temp", "+.5"}).get_number("temp"), 0.5);
    EXPECT_EQ(parse_ok({"run", "-m", "x", "-c", "+12"}).get_int("ctx-size"), 12);
    for (const char* yes : {"true", "1", "YES", "on"})
        EXPECT_EQ(parse_ok({"run", "-m", "x", "--validate", yes}).get_bool("validate"), true) << yes;
    for (const char* no : {"false", "0", "no", "Off"})
        EXPECT_EQ(parse_ok({"run", "-m", "x", "--validate", no}).get_bool("validate"), false) << no;
    EXPECT_EQ(parse_ok({"bench", "-p", "1,2,512"}).get_sizes("prompt-tokens"), (std::vector<int64_t>{1, 2, 512}));
    EXPECT_EQ(parse_ok({"bench"}).get_sizes("prompt-tokens"), (std::vector<int64_t>{512}));
}

TEST_F(Args, help_is_requested_anywhere_before_double_dash) {
    ParsedArgs a = parse_ok({"run", "--help"});
    EXPECT_TRUE(a.help_requested());
    EXPECT_EQ(a.command(), "run");
    a = parse_ok({"-h"});
    EXPECT_TRUE(a.help_requested());
    EXPECT_EQ(a.command(), "");
    // Left to right: arguments after the help request are not examined, those before are.
    EXPECT_TRUE(parse_ok({"run", "--help", "--temp", "abc"}).help_requested());
    EXPECT_TRUE(fails_with(parse({"run", "--temp", "abc", "--help"}), "--temp: 'abc' is not a number"));
}

TEST_F(Args, argc_argv_skips_the_program_name) {
    const char* argv[] = {"/usr/bin/tandem", "bench", "-r", "3"};
    auto a = cli::parse_args(demo_spec(), 4, argv, fake_env());
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ(a->command(), "bench");
    EXPECT_EQ(a->get_int("repetitions"), 3);
}

// ---------------------------------------------------------------------------------------
// Rejected command lines
// ---------------------------------------------------------------------------------------

TEST_F(Args, rejects_an_unknown_option_with_a_suggestion) {
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--temprature", "1"}),
                           "unknown option '--temprature' for 'tandem run' (did you mean '--temp'?)"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--ctx-sise", "1"}), "(did you mean '--ctx-size'?)"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "-mdd", "y"}), "(did you mean '-md'?)"));
    auto far = parse({"run", "-m", "x", "--qqqqqqqq"});
    ASSERT_TRUE(fails_with(far, "unknown option '--qqqqqqqq'"));
    EXPECT_EQ(far.error().message().find("did you mean"), std::string::npos);
}

TEST_F(Args, rejects_an_option_of_another_command_naming_it) {
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "-r", "3"}),
                           "unknown option '-r' for 'tandem run' (it is an option of 'tandem bench')"));
    EXPECT_TRUE(fails_with(parse({"--temp", "1", "run"}),
                           "option '--temp' belongs to 'tandem run'; put it after the command"));
}

TEST_F(Args, rejects_a_missing_value) {
    EXPECT_TRUE(fails_with(parse({"run", "-m"}), "-m: missing value (FNAME)"));
    EXPECT_TRUE(fails_with(parse({"bench", "--prompt-tokens"}), "--prompt-tokens: missing value (N,...)"));
}

TEST_F(Args, rejects_bad_numbers_naming_the_option_as_typed) {
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--temp", "abc"}), "--temp: 'abc' is not a number"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--temp", "0.5x"}), "--temp: '0.5x' is not a number"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--temp", ""}), "--temp: '' is not a number"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--temp", "inf"}), "--temp: 'inf' is not a finite number"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--temp", "1e999"}), "is not a finite number"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "-c", "12abc"}), "-c: '12abc' is not an integer"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "-c", "1.5"}), "-c: '1.5' is not an integer"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--ctx-size=99999999999999999999"}),
                           "--ctx-size: '99999999999999999999' is out of range"));
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--validate", "maybe"}), "--validate: 'maybe' is not a boolean"));
}

TEST_F(Args, rejects_bad_size_lists) {
    EXPECT_TRUE(fails_with(parse({"bench", "-p", "1,,3"}), "-p: '1,,3' is not a list of sizes"));
    EXPECT_TRUE(fails_with(parse({"bench", "-p", "1,-2"}), "('-2' is not a non-negative integer)"));
    EXPECT_TRUE(fails_with(parse({"bench", "-p", "1,x"}), "('x' is not a non-negative integer)"));
    EXPECT_TRUE(fails_with(parse({"bench", "-p", ""}), "-p: empty list"));
    EXPECT_TRUE(fails_with(parse({"bench", "-p", "3,"}), "is not a list of sizes"));
}

TEST_F(Args, rejects_bad_environment_values_naming_the_variable) {
    g_env = {{"TANDEM_CTX_SIZE", "big"}};
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x"}), "TANDEM_CTX_SIZE: 'big' is not an integer"));
}

TEST_F(Args, rejects_a_value_given_to_a_flag) {
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "--conversation=yes"}), "--conversation: takes no value (got 'yes')"));
}

TEST_F(Args, rejects_a_missing_required_option) {
    EXPECT_TRUE(fails_with(parse({"run", "--temp", "1"}), "missing required option -m, --model (or set TANDEM_MODEL)"));
}

TEST_F(Args, rejects_unknown_and_missing_commands) {
    EXPECT_TRUE(fails_with(parse({"rnu"}), "unknown command 'rnu' (did you mean 'run'?); see 'tandem --help'"));
    EXPECT_TRUE(fails_with(parse({}), "missing command (one of: run, bench)"));
    EXPECT_TRUE(fails_with(parse({"-v"}), "missing command"));
}

TEST_F(Args, rejects_extra_and_missing_positionals) {
    EXPECT_TRUE(fails_with(parse({"run", "-m", "x", "one", "two"}), "unexpected argument 'two' (takes at most 1)"));
    EXPECT_TRUE(fails_with(parse({"bench", "x"}), "unexpected argument 'x'"));

    cli::ProgramSpec copy;
    copy.name = "tdm-copy";
    copy.positionals = {{"SRC", "source"}, {"DST", "destinations", true, /*variadic=*/true}};
    EXPECT_TRUE(fails_with(parse({"a"}, copy), "missing argument DST"));
    auto ok = parse({"a", "b", "c"}, copy);
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ(ok->command(), "");
    EXPECT_EQ(ok->positionals(), (std::vector<std::string>{"a", "b", "c"}));
}

// ---------------------------------------------------------------------------------------
// Spec checks
// ---------------------------------------------------------------------------------------

TEST_F(Args, check_spec_accepts_the_demo_table) { EXPECT_TRUE(cli::check_spec(demo_spec()).ok()); }

TEST_F(Args, check_spec_rejects_mistakes_in_the_table) {
    auto with_run_option = [](cli::OptionSpec o) {
        cli::ProgramSpec s = demo_spec();
        s.commands[0].groups[0].options.push_back(std::move(o));
        return s;
    };
    EXPECT_TRUE(fails_with(cli::check_spec(with_run_option({{"--config"}, ValueKind::string})),
                           "spelling '--config' is used twice"));
    EXPECT_TRUE(fails_with(cli::check_spec(with_run_option({{"--n"}, ValueKind::integer, "", "", "ten"})),
                           "default: 'ten' is not an integer"));
    EXPECT_TRUE(fails_with(cli::check_spec(with_run_option({{"--f"}, ValueKind::flag, "", "", "true"})),
                           "a flag cannot have a default"));
    EXPECT_TRUE(fails_with(cli::check_spec(with_run_option({{"--r"}, ValueKind::string, "", "", "x", "", true})),
                           "a required option cannot have a default"));
    EXPECT_TRUE(fails_with(cli::check_spec(with_run_option({{"model2"}, ValueKind::string})), "not a valid spelling"));
    EXPECT_TRUE(fails_with(cli::check_spec(with_run_option({{"--a=b"}, ValueKind::string})), "not a valid spelling"));
    EXPECT_TRUE(fails_with(cli::check_spec(with_run_option({{"-h"}, ValueKind::flag})), "reserved for help"));
    EXPECT_TRUE(fails_with(cli::check_spec(with_run_option({{"--x"}, ValueKind::flag, "", "", "", "", false, false, "model"})),
                           "id 'model' is used twice"));
    EXPECT_TRUE(fails_with(cli::check_spec(with_run_option({{}, ValueKind::flag})), "an option without spellings"));

    cli::ProgramSpec s = demo_spec();
    s.commands[0].positionals = {{"A", "", true, true}, {"B", ""}};
    EXPECT_TRUE(fails_with(cli::check_spec(s), "variadic positional A must be the last"));
    s.commands[0].positionals = {{"A", "", false}, {"B", "", true}};
    EXPECT_TRUE(fails_with(cli::check_spec(s), "required positional B follows an optional one"));
    s = demo_spec();
    s.positionals = {{"X", ""}};
    EXPECT_TRUE(fails_with(cli::check_spec(s), "positionals belong to commands"));
    s = demo_spec();
    s.commands.push_back(s.commands[0]);
    EXPECT_TRUE(fails_with(cli::check_spec(s), "command 'run' defined twice"));
    // parse_args refuses to run on a broken table rather than misparse.
    EXPECT_TRUE(fails_with(parse({"run"}, s), "invalid command-line spec: tandem: command 'run' defined twice"));
}

TEST_F(Args, the_same_spelling_may_serve_different_commands) {
    cli::ProgramSpec s = demo_spec();
    s.commands[1].groups[0].options.push_back({{"-m", "--model"}, ValueKind::string, "FNAME", "Model."});
    ASSERT_TRUE(cli::check_spec(s).ok());
    auto a = parse({"bench", "-m", "b.gguf"}, s);
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ(a->get_string("model"), "b.gguf");
    // ... but an id keeps one type across commands, since lookups go by id alone.
    s.commands[1].groups[0].options.push_back({{"--temp"}, ValueKind::string});
    EXPECT_TRUE(fails_with(cli::check_spec(s), "option id 'temp' has another type in another command"));
}

}  // namespace
}  // namespace tdm::test
