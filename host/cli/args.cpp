// SPDX-License-Identifier: Apache-2.0
// host/cli/args.cpp: checking a ProgramSpec, parsing arguments against it, and rendering
// --help. One pass over the arguments; options are looked up by exact spelling in the
// scope in force (global options, plus the command's once the command word was seen).
#include "cli/args.h"

#include "config/suggest.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <set>

namespace tdm::cli {
namespace {

// ---------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------

std::string lower(std::string_view s) {
    std::string out(s);
    for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// Strict: the whole text must be the number (std::stoi would take "12abc" as 12).
std::optional<int64_t> to_int(std::string_view s, bool* out_of_range) {
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    int64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc::result_out_of_range && end == s.data() + s.size()) *out_of_range = true;
    if (ec != std::errc() || end != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

std::string_view default_value_name(ValueKind k) {
    switch (k) {
        case ValueKind::flag: return "";
        case ValueKind::string: return "TEXT";
        case ValueKind::integer: return "N";
        case ValueKind::number: return "X";
        case ValueKind::boolean: return "BOOL";
        case ValueKind::size_list: return "N,N,...";
    }
    return "VALUE";
}

std::string value_name(const OptionSpec& o) {
    return o.value_name.empty() ? std::string(default_value_name(o.kind)) : o.value_name;
}

std::string spellings(const OptionSpec& o) {
    std::string s;
    for (const std::string& n : o.names) s += (s.empty() ? "" : ", ") + n;
    return s;
}

// Looks like an option (and not a negative number or "-" for stdin).
bool is_option_like(std::string_view a) {
    if (a.size() < 2 || a[0] != '-') return false;
    const char c = a[1];
    return !((c >= '0' && c <= '9') || c == '.');
}

bool is_help(std::string_view a) { return a == "-h" || a == "--help"; }

}  // namespace

std::string option_id(const OptionSpec& o) {
    if (!o.id.empty()) return o.id;
    std::string_view best;
    for (const std::string& n : o.names)
        if (n.size() > best.size()) best = n;
    while (!best.empty() && best.front() == '-') best.remove_prefix(1);
    return std::string(best);
}

Result<Value> parse_value(ValueKind kind, std::string_view text, std::string_view who) {
    switch (kind) {
        case ValueKind::flag:
        case ValueKind::boolean: {
            const std::string t = lower(trim(text));
            if (t == "1" || t == "true" || t == "yes" || t == "on") return Value(true);
            if (t == "0" || t == "false" || t == "no" || t == "off") return Value(false);
            return Error::format("{}: '{}' is not a boolean (true/false, 1/0, yes/no, on/off)", who, text);
        }
        case ValueKind::string:
            return Value(std::string(text));
        case ValueKind::integer: {
            bool range = false;
            if (auto v = to_int(trim(text), &range)) return Value(*v);
            if (range) return Error::format("{}: '{}' is out of range", who, text);
            return Error::format("{}: '{}' is not an integer", who, text);
        }
        case ValueKind::number: {
            std::string_view s = trim(text);
            if (!s.empty() && s.front() == '+') s.remove_prefix(1);
            double v = 0.0;
            auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
            if (s.empty() || end != s.data() + s.size() || ec == std::errc::invalid_argument)
                return Error::format("{}: '{}' is not a number", who, text);
            if (ec == std::errc::result_out_of_range || !std::isfinite(v))
                return Error::format("{}: '{}' is not a finite number", who, text);
            return Value(v);
        }
        case ValueKind::size_list: {
            if (trim(text).empty()) return Error::format("{}: empty list (expected N,N,...)", who);
            std::vector<int64_t> out;
            std::string_view rest = text;
            for (;;) {
                const size_t comma = rest.find(',');
                const std::string_view item = trim(rest.substr(0, comma));
                bool range = false;
                auto v = to_int(item, &range);
                if (!v || *v < 0 || (!item.empty() && item.front() == '+'))
                    return Error::format("{}: '{}' is not a list of sizes ('{}' is not a non-negative integer)",
                                         who, text, item);
                out.push_back(*v);
                if (comma == std::string_view::npos) break;
                rest.remove_prefix(comma + 1);
            }
            return Value(std::move(out));
        }
    }
    return Error::format("{}: unsupported value kind", who);
}

namespace {

bool has_range(const OptionSpec& o) {
    return o.min_value != std::numeric_limits<int64_t>::min() || o.max_value != std::numeric_limits<int64_t>::max();
}

std::string range_text(const OptionSpec& o) {
    return fmt::format("allowed: {} to {}", o.min_value, o.max_value);
}

std::string choices_text(const OptionSpec& o) {
    std::string list;
    for (const std::string& c : o.choices) list += (list.empty() ? "" : ", ") + c;
    return list;
}

Status check_allowed(const OptionSpec& o, const Value& v, std::string_view who) {
    auto in_range = [&](int64_t x) { return x >= o.min_value && x <= o.max_value; };
    if (const int64_t* i = std::get_if<int64_t>(&v); i && !in_range(*i))
        return Error::format("{}: {} is out of range ({})", who, *i, range_text(o));
    if (const auto* list = std::get_if<std::vector<int64_t>>(&v))
        for (int64_t x : *list)
            if (!in_range(x)) return Error::format("{}: {} in the list is out of range ({})", who, x, range_text(o));
    if (const std::string* s = std::get_if<std::string>(&v); s && !o.choices.empty() &&
        std::find(o.choices.begin(), o.choices.end(), *s) == o.choices.end())
        return Error::format("{}: '{}' is not one of: {}{}", who, *s, choices_text(o), did_you_mean(*s, o.choices));
    return {};
}

}  // namespace

Result<Value> parse_value(const OptionSpec& option, std::string_view text, std::string_view who) {
    Value v = TDM_TRY(parse_value(option.kind, text, who));
    TDM_TRY(check_allowed(option, v, who));
    return v;
}

// ---------------------------------------------------------------------------------------
// Spec checks
// ---------------------------------------------------------------------------------------

namespace {

Status check_options(const std::vector<const OptionSpec*>& scope, std::string_view where) {
    std::set<std::string> seen_names, seen_ids;
    for (const OptionSpec* o : scope) {
        if (o->names.empty()) return Error::format("{}: an option without spellings", where);
        const std::string id = option_id(*o);
        const std::string label = fmt::format("{}: option {}", where, spellings(*o));
        for (const std::string& n : o->names) {
            if (!is_option_like(n) || n.find('=') != std::string::npos ||
                std::any_of(n.begin(), n.end(), [](char c) { return std::isspace(static_cast<unsigned char>(c)); }))
                return Error::format("{}: '{}' is not a valid spelling", label, n);
            if (is_help(n)) return Error::format("{}: '{}' is reserved for help", label, n);
            if (!seen_names.insert(n).second) return Error::format("{}: spelling '{}' is used twice", label, n);
        }
        if (!seen_ids.insert(id).second) return Error::format("{}: id '{}' is used twice", label, id);
        if (o->kind == ValueKind::flag && !o->default_value.empty())
            return Error::format("{}: a flag cannot have a default", label);
        if (o->required && !o->default_value.empty())
            return Error::format("{}: a required option cannot have a default", label);
        if (has_range(*o) && o->kind != ValueKind::integer && o->kind != ValueKind::size_list)
            return Error::format("{}: only integer options have a range", label);
        if (o->min_value > o->max_value) return Error::format("{}: an empty range", label);
        if (!o->choices.empty() && o->kind != ValueKind::string)
            return Error::format("{}: only string options have choices", label);
        if (!o->default_value.empty()) {
            auto v = parse_value(*o, o->default_value, "default");
            if (!v) return Error::format("{}: {}", label, v.error().message());
        }
    }
    return {};
}

Status check_positionals(const std::vector<PositionalSpec>& ps, std::string_view where) {
    bool optional_seen = false;
    for (size_t i = 0; i < ps.size(); ++i) {
        if (ps[i].name.empty()) return Error::format("{}: a positional without a name", where);
        if (ps[i].variadic && i + 1 != ps.size())
            return Error::format("{}: variadic positional {} must be the last", where, ps[i].name);
        if (ps[i].required && optional_seen)
            return Error::format("{}: required positional {} follows an optional one", where, ps[i].name);
        optional_seen |= !ps[i].required;
    }
    return {};
}

void collect(const std::vector<OptionGroup>& groups, std::vector<const OptionSpec*>* out) {
    for (const OptionGroup& g : groups)
        for (const OptionSpec& o : g.options) out->push_back(&o);
}

}  // namespace

Status check_spec(const ProgramSpec& spec) {
    std::vector<const OptionSpec*> global;
    collect(spec.global, &global);
    TDM_TRY(check_options(global, spec.name));
    TDM_TRY(check_positionals(spec.positionals, spec.name));
    if (!spec.commands.empty() && !spec.positionals.empty())
        return Error::format("{}: positionals belong to commands when there are commands", spec.name);
    std::set<std::string> names;
    for (const CommandSpec& c : spec.commands) {
        if (c.name.empty() || c.name.front() == '-') return Error::format("{}: bad command name '{}'", spec.name, c.name);
        if (!names.insert(c.name).second) return Error::format("{}: command '{}' defined twice", spec.name, c.name);
        std::vector<const OptionSpec*> scope = global;
        collect(c.groups, &scope);
        TDM_TRY(check_options(scope, spec.name + " " + c.name));
        TDM_TRY(check_positionals(c.positionals, spec.name + " " + c.name));
    }
    // ParsedArgs looks options up by id alone, so an id must mean one type everywhere.
    std::map<std::string, ValueKind> kinds;
    for (const OptionSpec* o : global) kinds[option_id(*o)] = o->kind;
    for (const CommandSpec& c : spec.commands) {
        std::vector<const OptionSpec*> own;
        collect(c.groups, &own);
        for (const OptionSpec* o : own)
            if (!kinds.emplace(option_id(*o), o->kind).second && kinds[option_id(*o)] != o->kind)
                return Error::format("{} {}: option id '{}' has another type in another command", spec.name, c.name,
                                     option_id(*o));
    }
    return {};
}

// ---------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------

class Parser {
public:
    Parser(const ProgramSpec& spec, const EnvLookup& env) : spec_(spec), env_(env) {
        collect(spec.global, &scope_);
        for (const CommandSpec& c : spec.commands) {
            std::vector<const OptionSpec*> opts;
            collect(c.groups, &opts);
            for (const OptionSpec* o : opts) out_.all_ids_[option_id(*o)] = o->kind;
        }
        for (const OptionSpec* o : scope_) out_.all_ids_[option_id(*o)] = o->kind;
    }

    Result<ParsedArgs> run(std::span<const std::string> args) {
        bool options_done = false;
        for (size_t i = 0; i < args.size(); ++i) {
            const std::string& a = args[i];
            if (!options_done && a == "--") {
                options_done = true;
                continue;
            }
            if (!options_done && is_help(a)) {
                out_.help_ = true;
                return std::move(out_);
            }
            if (!options_done && is_option_like(a)) {
                TDM_TRY(option(args, &i));
                continue;
            }
            if (!spec_.commands.empty() && !command_) {
                TDM_TRY(select_command(a));
                continue;
            }
            out_.positionals_.push_back(a);
        }
        const bool complete_without_command = !spec_.no_command_flag.empty() && out_.entry(spec_.no_command_flag);
        if (!spec_.commands.empty() && !command_ && !complete_without_command) {
            std::string list;
            for (const CommandSpec& c : spec_.commands) list += (list.empty() ? "" : ", ") + c.name;
            return Error::format("missing command (one of: {}); see '{} --help'", list, spec_.name);
        }
        TDM_TRY(check_positional_count());
        TDM_TRY(fill_absent());
        return std::move(out_);
    }

private:
    Status select_command(const std::string& word) {
        for (const CommandSpec& c : spec_.commands) {
            if (c.name != word) continue;
            command_ = &c;
            out_.command_ = c.name;
            collect(c.groups, &scope_);
            return {};
        }
        std::vector<std::string> names;
        for (const CommandSpec& c : spec_.commands) names.push_back(c.name);
        return Error::format("unknown command '{}'{}; see '{} --help'", word, did_you_mean(word, names), spec_.name);
    }

    const OptionSpec* find(std::string_view spelling) const {
        for (const OptionSpec* o : scope_)
            for (const std::string& n : o->names)
                if (n == spelling) return o;
        return nullptr;
    }

    Status unknown(const std::string& name) const {
        std::vector<std::string> names;
        for (const OptionSpec* o : scope_)
            for (const std::string& n : o->names) names.push_back(n);
        names.push_back("--help");
        std::string where;
        if (command_) where = fmt::format(" for '{} {}'", spec_.name, command_->name);
        // An option of another command: say which, rather than guess at a near spelling.
        for (const CommandSpec& c : spec_.commands) {
            std::vector<const OptionSpec*> opts;
            collect(c.groups, &opts);
            for (const OptionSpec* o : opts)
                if (std::find(o->names.begin(), o->names.end(), name) != o->names.end()) {
                    if (!command_)
                        return Error::format("option '{}' belongs to '{} {}'; put it after the command", name,
                                             spec_.name, c.name);
                    return Error::format("unknown option '{}'{} (it is an option of '{} {}')", name, where,
                                         spec_.name, c.name);
                }
        }
        return Error::format("unknown option '{}'{}{}", name, where, did_you_mean(name, names));
    }

    Status option(std::span<const std::string> args, size_t* i) {
        const std::string& a = args[*i];
        std::string name = a;
        std::optional<std::string> inline_value;
        if (a.starts_with("--")) {
            if (const size_t eq = a.find('='); eq != std::string::npos) {
                name = a.substr(0, eq);
                inline_value = a.substr(eq + 1);
            }
        }
        const OptionSpec* o = find(name);
        if (!o) return unknown(name);
        Value v;
        if (o->kind == ValueKind::flag) {
            if (inline_value) return Error::format("{}: takes no value (got '{}')", name, *inline_value);
            v = true;
        } else {
            std::string text;
            if (inline_value) {
                text = *inline_value;
            } else {
                if (*i + 1 >= args.size()) return Error::format("{}: missing value ({})", name, value_name(*o));
                text = args[++*i];
            }
            v = TDM_TRY(parse_value(*o, text, name));
        }
        ParsedArgs::Entry& e = out_.entries_[option_id(*o)];
        e.kind = o->kind;
        if (e.origin != Origin::command_line || !o->repeatable) e.values.clear();
        e.values.push_back(std::move(v));
        e.origin = Origin::command_line;
        e.source_name = name;
        return {};
    }

    Status check_positional_count() const {
        const std::vector<PositionalSpec>& ps = command_ ? command_->positionals : spec_.positionals;
        const std::vector<std::string>& got = out_.positionals_;
        const bool variadic = !ps.empty() && ps.back().variadic;
        if (got.size() > ps.size() && !variadic) {
            const std::string& extra = got[ps.size()];
            if (ps.empty()) return Error::format("unexpected argument '{}'", extra);
            return Error::format("unexpected argument '{}' (takes at most {})", extra, ps.size());
        }
        for (size_t k = got.size(); k < ps.size(); ++k)
            if (ps[k].required) return Error::format("missing argument {}", ps[k].name);
        return {};
    }

    // Options not on the command line: the environment, then the default; then the
    // required check, which only the command line or the environment can satisfy.
    Status fill_absent() {
        for (const OptionSpec* o : scope_) {
            ParsedArgs::Entry& e = out_.entries_[option_id(*o)];
            e.kind = o->kind;
            if (e.origin == Origin::command_line) continue;
            if (!o->env.empty()) {
                if (auto text = env_(o->env); text && !text->empty()) {
                    e.values = {TDM_TRY(parse_value(*o, *text, o->env))};
                    e.origin = Origin::environment;
                    e.source_name = o->env;
                    continue;
                }
            }
            if (o->required) {
                std::string msg = fmt::format("missing required option {}", spellings(*o));
                if (!o->env.empty()) msg += fmt::format(" (or set {})", o->env);
                return Error(std::move(msg));
            }
            e.source_name = o->names.back();
            for (const std::string& n : o->names)
                if (n.starts_with("--")) {
                    e.source_name = n;
                    break;
                }
            if (!o->default_value.empty()) {
                e.values = {TDM_TRY(parse_value(*o, o->default_value, "default"))};
                e.origin = Origin::default_value;
            } else if (o->kind == ValueKind::flag) {
                e.values = {Value(false)};
            }
        }
        return {};
    }

    const ProgramSpec& spec_;
    const EnvLookup& env_;
    const CommandSpec* command_ = nullptr;
    std::vector<const OptionSpec*> scope_;
    ParsedArgs out_;
};

Result<ParsedArgs> parse_args(const ProgramSpec& spec, std::span<const std::string> args, const EnvLookup& env) {
    TDM_TRY_CTX(check_spec(spec), "invalid command-line spec");
    return Parser(spec, env).run(args);
}

Result<ParsedArgs> parse_args(const ProgramSpec& spec, int argc, const char* const* argv, const EnvLookup& env) {
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
    return parse_args(spec, args, env);
}

EnvLookup process_environment() {
    return [](const std::string& name) -> std::optional<std::string> {
        if (const char* v = std::getenv(name.c_str())) return std::string(v);
        return std::nullopt;
    };
}

// ---------------------------------------------------------------------------------------
// ParsedArgs access
// ---------------------------------------------------------------------------------------

const ParsedArgs::Entry* ParsedArgs::entry(std::string_view id) const {
    TDM_ASSERT_MSG(all_ids_.find(id) != all_ids_.end(), "option id not in the spec");
    auto it = entries_.find(id);
    return it == entries_.end() ? nullptr : &it->second;
}

template <class T>
std::optional<T> ParsedArgs::last(std::string_view id, ValueKind kind) const {
    auto k = all_ids_.find(id);
    TDM_ASSERT_MSG(k != all_ids_.end() && k->second == kind, "option id not in the spec, or of another type");
    const Entry* e = entry(id);
    if (!e || e->values.empty()) return std::nullopt;
    return std::get<T>(e->values.back());
}

Origin ParsedArgs::origin(std::string_view id) const {
    const Entry* e = entry(id);
    return e ? e->origin : Origin::absent;
}

bool ParsedArgs::has(std::string_view id) const {
    const Origin o = origin(id);
    return o == Origin::command_line || o == Origin::environment;
}

bool ParsedArgs::flag(std::string_view id) const { return last<bool>(id, ValueKind::flag).value_or(false); }

std::optional<std::string> ParsedArgs::get_string(std::string_view id) const {
    return last<std::string>(id, ValueKind::string);
}
std::optional<int64_t> ParsedArgs::get_int(std::string_view id) const { return last<int64_t>(id, ValueKind::integer); }
std::optional<double> ParsedArgs::get_number(std::string_view id) const { return last<double>(id, ValueKind::number); }
std::optional<bool> ParsedArgs::get_bool(std::string_view id) const { return last<bool>(id, ValueKind::boolean); }
std::optional<std::vector<int64_t>> ParsedArgs::get_sizes(std::string_view id) const {
    return last<std::vector<int64_t>>(id, ValueKind::size_list);
}

std::vector<Value> ParsedArgs::values(std::string_view id) const {
    const Entry* e = entry(id);
    return e ? e->values : std::vector<Value>{};
}

std::vector<std::string> ParsedArgs::get_strings(std::string_view id) const {
    auto k = all_ids_.find(id);
    TDM_ASSERT_MSG(k != all_ids_.end() && k->second == ValueKind::string, "option id not a string option");
    std::vector<std::string> out;
    for (const Value& v : values(id)) out.push_back(std::get<std::string>(v));
    return out;
}

std::string ParsedArgs::source_name(std::string_view id) const {
    const Entry* e = entry(id);
    return e ? e->source_name : std::string(id);
}

// ---------------------------------------------------------------------------------------
// Help
// ---------------------------------------------------------------------------------------

namespace {

constexpr size_t kIndent = 2;
constexpr size_t kHelpColumn = 32;  // where option help starts; longer spellings wrap below

// Appends `text` word-wrapped to kHelpWidth. The first line continues at column `first`
// (the caller has already written that much of it); later lines start at `indent`.
// A '\n' in the text starts a new line.
void wrap(std::string* out, std::string_view text, size_t first, size_t indent) {
    size_t col = first;
    bool line_empty = true;
    size_t pos = 0;
    while (pos <= text.size()) {
        const size_t nl = text.find('\n', pos);
        const std::string_view para = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
        size_t w = 0;
        while (w < para.size()) {
            while (w < para.size() && para[w] == ' ') ++w;
            if (w >= para.size()) break;
            size_t e = para.find(' ', w);
            if (e == std::string_view::npos) e = para.size();
            const std::string_view word = para.substr(w, e - w);
            const size_t need = word.size() + (line_empty ? 0 : 1);
            if (!line_empty && col + need > static_cast<size_t>(kHelpWidth)) {
                *out += '\n' + std::string(indent, ' ');
                col = indent;
                line_empty = true;
            }
            if (!line_empty) {
                *out += ' ';
                ++col;
            }
            *out += word;
            col += word.size();
            line_empty = false;
            w = e;
        }
        if (nl == std::string_view::npos) break;
        *out += '\n' + std::string(indent, ' ');
        col = indent;
        line_empty = true;
        pos = nl + 1;
    }
    *out += '\n';
}

void option_help(std::string* out, const OptionSpec& o) {
    std::string left = std::string(kIndent, ' ') + spellings(o);
    if (o.kind != ValueKind::flag) left += " " + value_name(o);
    std::string text = o.help;
    std::vector<std::string> notes;
    if (o.required) notes.push_back("required");
    if (!o.default_value.empty()) notes.push_back("default: " + o.default_value);
    if (o.repeatable) notes.push_back("repeatable");
    if (!o.env.empty()) notes.push_back("env: " + o.env);
    if (!notes.empty()) {
        std::string joined;
        for (const std::string& n : notes) joined += (joined.empty() ? "" : "; ") + n;
        text += (text.empty() ? "(" : " (") + joined + ")";
    }
    *out += left;
    if (left.size() + 2 <= kHelpColumn) {
        *out += std::string(kHelpColumn - left.size(), ' ');
    } else {
        *out += '\n' + std::string(kHelpColumn, ' ');
    }
    wrap(out, text, kHelpColumn, kHelpColumn);
}

void groups_help(std::string* out, const std::vector<OptionGroup>& groups, std::string_view default_title) {
    for (const OptionGroup& g : groups) {
        if (g.options.empty()) continue;
        *out += '\n' + (g.title.empty() ? std::string(default_title) : g.title) + ":\n";
        for (const OptionSpec& o : g.options) option_help(out, o);
    }
}

std::string positional_usage(const std::vector<PositionalSpec>& ps) {
    std::string s;
    for (const PositionalSpec& p : ps) {
        std::string item = p.name + (p.variadic ? "..." : "");
        s += " " + (p.required ? item : "[" + item + "]");
    }
    return s;
}

void positionals_help(std::string* out, const std::vector<PositionalSpec>& ps) {
    if (ps.empty()) return;
    *out += "\narguments:\n";
    for (const PositionalSpec& p : ps) {
        const std::string left = std::string(kIndent, ' ') + p.name;
        *out += left;
        if (left.size() + 2 <= kHelpColumn)
            *out += std::string(kHelpColumn - left.size(), ' ');
        else
            *out += '\n' + std::string(kHelpColumn, ' ');
        wrap(out, p.help, kHelpColumn, kHelpColumn);
    }
}

// The global groups with -h/--help first in the first of them: every program has it, and
// it belongs with the options that work everywhere.
std::vector<OptionGroup> with_help(const std::vector<OptionGroup>& global) {
    std::vector<OptionGroup> groups = global;
    if (groups.empty()) groups.push_back({});
    groups.front().options.insert(groups.front().options.begin(),
                                  OptionSpec{{"-h", "--help"}, ValueKind::flag, "", "Show this help and exit."});
    return groups;
}

void usage_line(std::string* out, std::string_view text) {
    const std::string head = "usage: ";
    *out += head;
    wrap(out, text, head.size(), head.size() + 2);
}

}  // namespace

std::string help_text(const ProgramSpec& spec) {
    std::string out;
    if (spec.commands.empty()) {
        usage_line(&out, spec.name + " [options]" + positional_usage(spec.positionals));
    } else {
        usage_line(&out, spec.name + " <command> [options]");
    }
    if (!spec.summary.empty()) {
        out += '\n';
        wrap(&out, spec.summary, 0, 0);
    }
    if (!spec.commands.empty()) {
        out += "\ncommands:\n";
        size_t widest = 0;
        for (const CommandSpec& c : spec.commands) widest = std::max(widest, c.name.size());
        const size_t column = std::min(kIndent + widest + 2, kHelpColumn);
        for (const CommandSpec& c : spec.commands) {
            const std::string left = std::string(kIndent, ' ') + c.name;
            out += left;
            if (left.size() + 2 <= column)
                out += std::string(column - left.size(), ' ');
            else
                out += '\n' + std::string(column, ' ');
            wrap(&out, c.summary, column, column);
        }
    }
    positionals_help(&out, spec.positionals);
    groups_help(&out, with_help(spec.global), spec.commands.empty() ? "options" : "global options");
    if (!spec.commands.empty()) {
        out += '\n';
        wrap(&out, fmt::format("Run '{} <command> --help' for the options of a command.", spec.name), 0, 0);
    }
    return out;
}

std::string help_text(const ProgramSpec& spec, std::string_view command) {
    const CommandSpec* c = nullptr;
    for (const CommandSpec& cand : spec.commands)
        if (cand.name == command) c = &cand;
    if (!c) return help_text(spec);
    std::string out;
    usage_line(&out, fmt::format("{} {} [options]{}", spec.name, c->name, positional_usage(c->positionals)));
    const std::string& about = c->description.empty() ? c->summary : c->description;
    if (!about.empty()) {
        out += '\n';
        wrap(&out, about, 0, 0);
    }
    positionals_help(&out, c->positionals);
    groups_help(&out, c->groups, "options");
    groups_help(&out, with_help(spec.global), "global options");
    return out;
}

}  // namespace tdm::cli
