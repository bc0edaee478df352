/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/args.h: a small declarative command-line parser for llama.cpp-style CLIs:
// subcommands, options with several exact spellings (-m, --model, and multi-letter single
// dash ones such as -md or -ngl), --long=value, typed values, repeatable and required
// options, environment-variable fallbacks, positional arguments, and generated --help text
// wrapped to 80 columns. Errors come back as Error values; nothing here prints or exits.
// Not here: what the options mean (the CLI's command table) or merging them into a Config.
//
// Usage:
//   ProgramSpec spec{"tandem", "LLM inference with speculative decoding", {...globals},
//                    {{"run", "Generate text", "", {{"model", {{{"-m", "--model"}, ...}}}}}}};
//   auto args = parse_args(spec, argc, argv);
//   if (!args) { print(args.error().message()); return 2; }
//   if (args->help_requested()) { print(help_text(spec, args->command())); return 0; }
//   std::string model = args->get_string("model").value_or("");
//
// Rules, following llama.cpp's parser where it has one:
// - A spelling matches exactly: "-md" is its own option, never "-m" with value "d".
// - A value is the next argument, whatever it looks like ("--seed -1", "-p --verbose");
//   "--name=value" also works for spellings that start with "--".
// - A non-repeatable option given twice keeps the last value (scripts append overrides).
// - "-h" / "--help" before "--" asks for help; the arguments after it are not examined
//   (those before it are, left to right). "--" ends the options.
// - Arguments that look like negative numbers ("-5") are positional, not options.
// - Global options are accepted before and after the subcommand.
// - A value outside the option's range or choices is an error naming the option, the value
//   and what is allowed, whether it came from the command line or the environment.
#pragma once

#include "common/error.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tdm::cli {

enum class ValueKind {
    flag,       // no value: present or not
    string,     // any text
    integer,    // 64-bit signed, decimal
    number,     // finite floating point ("0.8", "1e-3")
    boolean,    // true/false, 1/0, yes/no, on/off
    size_list,  // comma-separated non-negative integers ("1,2,3")
};

struct OptionSpec {
    std::vector<std::string> names;  // every spelling, e.g. {"-m", "--model"}; each starts with '-'
    ValueKind kind = ValueKind::string;
    std::string value_name;     // shown in --help ("FNAME"); "" = a name for the kind ("N", "TEXT")
    std::string help;           // one sentence or more; wrapped by help_text
    std::string default_value;  // as it would be typed; "" = none (flags have none)
    std::string env;            // variable read when the option is not on the command line
    bool required = false;      // must come from the command line or the environment
    bool repeatable = false;    // keep every occurrence (values()) instead of the last
    std::string id;             // key for ParsedArgs; "" = the longest spelling without dashes
    // integer and size_list (each item): the values the option's consumer can hold. A value
    // outside is refused with the range, never wrapped to a narrower type.
    int64_t min_value = std::numeric_limits<int64_t>::min();
    int64_t max_value = std::numeric_limits<int64_t>::max();
    // string: the accepted words ("text", "json"); empty = any text.
    std::vector<std::string> choices;
};

struct OptionGroup {
    std::string title;  // section heading in --help ("sampling")
    std::vector<OptionSpec> options;
};

struct PositionalSpec {
    std::string name;  // in usage and help ("PROMPT")
    std::string help;
    bool required = true;
    bool variadic = false;  // takes all remaining arguments; only the last positional
};

struct CommandSpec {
    std::string name;         // the word on the command line ("run")
    std::string summary;      // one line, for the command list
    std::string description;  // its own --help ("" = the summary)
    std::vector<OptionGroup> groups;
    std::vector<PositionalSpec> positionals;
};

struct ProgramSpec {
    std::string name;     // program name in usage lines
    std::string summary;  // one paragraph under the program's usage line
    std::vector<OptionGroup> global;     // valid with every command (and without one)
    std::vector<CommandSpec> commands;   // empty: a program without subcommands
    std::vector<PositionalSpec> positionals;  // only for a program without subcommands
    // The id of a global flag that, like --help, is complete without a command (`version`).
    std::string no_command_flag;
};

using Value = std::variant<bool, int64_t, double, std::string, std::vector<int64_t>>;

// Where an option's value came from.
enum class Origin { absent, default_value, environment, command_line };

class ParsedArgs {
public:
    const std::string& command() const { return command_; }  // "" when none was given
    bool help_requested() const { return help_; }
    const std::vector<std::string>& positionals() const { return positionals_; }

    // Typed access by option id. Asking for an id the spec does not have, or with the
    // wrong type, is a programming error (asserts). An option of another command reads as
    // absent. Values include defaults; has() tells whether the user set it.
    bool knows(std::string_view id) const { return all_ids_.find(id) != all_ids_.end(); }  // in the spec
    Origin origin(std::string_view id) const;
    bool has(std::string_view id) const;  // from the command line or the environment
    bool flag(std::string_view id) const;
    std::optional<std::string> get_string(std::string_view id) const;
    std::optional<int64_t> get_int(std::string_view id) const;
    std::optional<double> get_number(std::string_view id) const;
    std::optional<bool> get_bool(std::string_view id) const;
    std::optional<std::vector<int64_t>> get_sizes(std::string_view id) const;
    // Every occurrence, in command-line order (one value for a non-repeatable option).
    std::vector<Value> values(std::string_view id) const;
    std::vector<std::string> get_strings(std::string_view id) const;
    // How the value was named: the spelling typed, the environment variable, or the
    // option's first long spelling. For messages about values checked later.
    std::string source_name(std::string_view id) const;

private:
    friend class Parser;
    struct Entry {
        ValueKind kind = ValueKind::string;
        Origin origin = Origin::absent;
        std::vector<Value> values;
        std::string source_name;
    };
    const Entry* entry(std::string_view id) const;
    template <class T>
    std::optional<T> last(std::string_view id, ValueKind kind) const;

    std::string command_;
    bool help_ = false;
    std::vector<std::string> positionals_;
    std::map<std::string, Entry, std::less<>> entries_;  // options in scope
    std::map<std::string, ValueKind, std::less<>> all_ids_;  // every option of the spec
};

// Reads one environment variable; tests pass a map instead of the real environment.
using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;
EnvLookup process_environment();

// Checks the spec itself (unique spellings, parseable defaults, positional order, ...).
// parse_args runs it first; a test of the real CLI table should call it too.
Status check_spec(const ProgramSpec& spec);

// Parses arguments (without the program name). Errors name the option as typed:
//   "unknown option '--temprature' (did you mean '--temp'?)"
//   "--temp: 'abc' is not a number"        "-m: missing value (FNAME)"
//   "missing required option -m, --model"  "unknown command 'rnu' (did you mean 'run'?)"
Result<ParsedArgs> parse_args(const ProgramSpec& spec, std::span<const std::string> args,
                              const EnvLookup& env = process_environment());
// Same, from main()'s arguments; argv[0] is skipped.
Result<ParsedArgs> parse_args(const ProgramSpec& spec, int argc, const char* const* argv,
                              const EnvLookup& env = process_environment());

// The key of an option in ParsedArgs: its id, or its longest spelling without dashes.
std::string option_id(const OptionSpec& o);

// Parses one value the way the command line does; `who` names it in errors ("--temp").
Result<Value> parse_value(ValueKind kind, std::string_view text, std::string_view who);
// Same, then checks the option's range or choices:
//   "-c: 4294967296 is out of range (allowed: 0 to 2147483647)"
//   "--output-format: 'xml' is not one of: text, json"
Result<Value> parse_value(const OptionSpec& option, std::string_view text, std::string_view who);

constexpr int kHelpWidth = 80;

// The program's help: usage, summary, the command list, the global options.
std::string help_text(const ProgramSpec& spec);
// A command's help: usage with its positionals, description, its option groups, then the
// global options. An empty or unknown command gives the program's help.
std::string help_text(const ProgramSpec& spec, std::string_view command);

}  // namespace tdm::cli
