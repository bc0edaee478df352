/* SPDX-License-Identifier: Apache-2.0 */
// tests/cli/cli_test_spec.h: a small tandem-like command table shared by the parser and
// help tests: global options, two subcommands, every value kind, an environment fallback,
// a required option, a repeatable one and llama.cpp-style multi-letter spellings.
#pragma once

#include "cli/args.h"

namespace tdm::test {

inline cli::ProgramSpec demo_spec() {
    using cli::ValueKind;
    cli::ProgramSpec s;
    s.name = "tandem";
    s.summary = "LLM inference with speculative decoding.";
    s.global = {{"general",
                 {
                     {{"--config"}, ValueKind::string, "FILE", "Read settings from FILE.", "", "TANDEM_CONFIG"},
                     {{"-v", "--verbose"}, ValueKind::flag, "", "Log more."},
                     {{"--log-level"}, ValueKind::string, "LEVEL", "Log level.", "warn"},
                 }}};

    cli::CommandSpec run;
    run.name = "run";
    run.summary = "Generate text from a prompt.";
    run.groups = {
        {"model",
         {
             {{"-m", "--model"}, ValueKind::string, "FNAME", "Target model.", "", "TANDEM_MODEL", /*required=*/true},
             {{"-md", "--model-draft"}, ValueKind::string, "FNAME", "Draft model."},
             {{"-c", "--ctx-size"}, ValueKind::integer, "N", "Context size.", "4096", "TANDEM_CTX_SIZE"},
         }},
        {"sampling",
         {
             {{"--temp"}, ValueKind::number, "N", "Temperature.", "0.8"},
             {{"-s", "--seed"}, ValueKind::integer, "SEED", "Random seed.", "-1"},
             {{"-cnv", "--conversation"}, ValueKind::flag, "", "Chat mode."},
         }},
        {"speculative",
         {
             {{"--spec-type"}, ValueKind::string, "TYPE", "Drafter to use.", "", "", false, /*repeatable=*/true},
             {{"--validate"}, ValueKind::boolean, "BOOL", "Validation layers.", "false"},
         }},
    };
    run.positionals = {{"PROMPT", "Prompt text.", /*required=*/false}};

    cli::CommandSpec bench;
    bench.name = "bench";
    bench.summary = "Measure decode and speculative speed.";
    bench.groups = {{"bench",
                     {
                         {{"-p", "--prompt-tokens"}, ValueKind::size_list, "N,...", "Prompt lengths.", "512"},
                         {{"-r", "--repetitions"}, ValueKind::integer, "N", "Runs per case.", "5"},
                     }}};
    s.commands = {run, bench};
    return s;
}

}  // namespace tdm::test
