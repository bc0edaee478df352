// SPDX-License-Identifier: Apache-2.0
// tests/cli/help_test.cpp: generated --help text: layout of the program and command pages,
// what each option line shows (spellings, value name, default, env, required, repeatable),
// and wrapping to 80 columns. The golden strings are the intended layout; change them
// deliberately when the layout changes.
#include "cli_test_spec.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tdm::test {
namespace {

using cli::ValueKind;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

TEST(Help, program_page_lists_commands_and_global_options) {
    EXPECT_EQ(cli::help_text(demo_spec()),
              "usage: tandem <command> [options]\n"
              "\n"
              "LLM inference with speculative decoding.\n"
              "\n"
              "commands:\n"
              "  run    Generate text from a prompt.\n"
              "  bench  Measure decode and speculative speed.\n"
              "\n"
              "general:\n"
              "  -h, --help                    Show this help and exit.\n"
              "  --config FILE                 Read settings from FILE. (env: TANDEM_CONFIG)\n"
              "  -v, --verbose                 Log more.\n"
              "  --log-level LEVEL             Log level. (default: warn)\n"
              "\n"
              "Run 'tandem <command> --help' for the options of a command.\n");
}

TEST(Help, command_page_shows_groups_in_order_then_the_global_options) {
    const std::string h = cli::help_text(demo_spec(), "run");
    EXPECT_EQ(h.rfind("usage: tandem run [options] [PROMPT]\n\nGenerate text from a prompt.\n", 0), 0u) << h;
    const size_t args = h.find("\narguments:\n  PROMPT"), model = h.find("\nmodel:\n"),
                 sampling = h.find("\nsampling:\n"), spec = h.find("\nspeculative:\n"), global = h.find("\ngeneral:\n");
    ASSERT_NE(global, std::string::npos) << h;
    EXPECT_LT(args, model);
    EXPECT_LT(model, sampling);
    EXPECT_LT(sampling, spec);
    EXPECT_LT(spec, global);
    EXPECT_EQ(h.find("bench"), std::string::npos);  // nothing of the other command
}

TEST(Help, option_lines_show_spellings_value_default_env_and_flags) {
    const std::string h = cli::help_text(demo_spec(), "run");
    EXPECT_NE(h.find("  -m, --model FNAME             Target model. (required; env: TANDEM_MODEL)\n"), std::string::npos) << h;
    EXPECT_NE(h.find("  -md, --model-draft FNAME      Draft model.\n"), std::string::npos);
    EXPECT_NE(h.find("  --temp N                      Temperature. (default: 0.8)\n"), std::string::npos);
    EXPECT_NE(h.find("  -cnv, --conversation          Chat mode.\n"), std::string::npos);  // a flag: no value
    EXPECT_NE(h.find("  --spec-type TYPE              Drafter to use. (repeatable)\n"), std::string::npos);
}

TEST(Help, value_names_default_by_kind) {
    cli::ProgramSpec s;
    s.name = "t";
    s.global = {{"", {{{"--a"}, ValueKind::integer}, {{"--b"}, ValueKind::size_list}, {{"--c"}, ValueKind::string}}}};
    const std::string h = cli::help_text(s);
    EXPECT_NE(h.find("\noptions:\n"), std::string::npos) << h;  // untitled group, no commands
    EXPECT_NE(h.find("  --a N"), std::string::npos);
    EXPECT_NE(h.find("  --b N,N,..."), std::string::npos);
    EXPECT_NE(h.find("  --c TEXT"), std::string::npos);
}

TEST(Help, long_text_wraps_to_80_columns_under_the_help_column) {
    cli::ProgramSpec s = demo_spec();
    s.commands[0].groups[0].options.push_back(
        {{"-lcs", "--lookup-cache-static"}, ValueKind::string, "FNAME",
         "Path to a static lookup cache for n-gram speculative decoding, built offline from a corpus of text "
         "that resembles what the model will generate; it is read once at start-up and never written.",
         "", "TANDEM_LOOKUP_CACHE_STATIC"});
    s.commands[0].description =
        "Generate text from a prompt with the target model, drafting with whatever speculative decoding the "
        "options ask for, and stream it to standard output as it is produced.\nA second paragraph.";
    const std::string h = cli::help_text(s, "run");
    for (const std::string& line : lines_of(h)) EXPECT_LE(line.size(), 80u) << "'" << line << "'";
    // The spellings are too wide for the column: the help starts on the next line, indented.
    EXPECT_NE(h.find("  -lcs, --lookup-cache-static FNAME\n                                Path to a static"),
              std::string::npos)
        << h;
    EXPECT_NE(h.find("(env:"), std::string::npos);
    EXPECT_NE(h.find("produced.\nA second paragraph.\n"), std::string::npos) << h;
    // Continuation lines of option help start at the help column.
    const std::vector<std::string> lines = lines_of(h);
    auto it = std::find_if(lines.begin(), lines.end(), [](const std::string& l) { return l.find("Path to a static") != std::string::npos; });
    ASSERT_NE(it, lines.end());
    ASSERT_NE(it + 1, lines.end());
    EXPECT_EQ((it + 1)->find_first_not_of(' '), 32u) << *(it + 1);
}

TEST(Help, a_word_longer_than_the_line_is_kept_whole) {
    cli::ProgramSpec s;
    s.name = "t";
    const std::string url = "https://example.com/" + std::string(90, 'x');
    s.summary = "See " + url + " for more.";
    const std::string h = cli::help_text(s);
    EXPECT_NE(h.find("See\n" + url + "\nfor more.\n"), std::string::npos) << h;
}

TEST(Help, a_program_without_commands_shows_its_positionals) {
    cli::ProgramSpec s;
    s.name = "tdm-quantize";
    s.summary = "Requantize a GGUF file.";
    s.positionals = {{"INPUT", "Source GGUF."}, {"OUTPUT", "Destination GGUF.", false}};
    s.global = {{"", {{{"-t", "--type"}, ValueKind::string, "TYPE", "Target type.", "q4_k"}}}};
    const std::string h = cli::help_text(s);
    EXPECT_EQ(h.rfind("usage: tdm-quantize [options] INPUT [OUTPUT]\n", 0), 0u) << h;
    EXPECT_NE(h.find("\narguments:\n  INPUT                         Source GGUF.\n"), std::string::npos) << h;
    EXPECT_NE(h.find("  -t, --type TYPE               Target type. (default: q4_k)\n"), std::string::npos) << h;
    EXPECT_EQ(h.find("<command>"), std::string::npos);
}

TEST(Help, an_unknown_command_gives_the_program_page) {
    EXPECT_EQ(cli::help_text(demo_spec(), "nope"), cli::help_text(demo_spec()));
    EXPECT_EQ(cli::help_text(demo_spec(), ""), cli::help_text(demo_spec()));
}

}  // namespace
}  // namespace tdm::test
