// SPDX-License-Identifier: Apache-2.0
// host/cli/constraint_option.cpp: --grammar and --json-schema (see constraint_option.h).
#include "cli/constraint_option.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "common/file_read.h"

namespace tdm::cli {
namespace {

// A grammar or schema far larger than any a request may send (serve/openai_request.h) is
// a wrong path's contents.
constexpr uint64_t kMaxConstraintFileBytes = 16ull << 20;

Result<std::string> file_or_text(const std::string& value, std::string_view what) {
    std::error_code ec;
    if (std::filesystem::is_regular_file(value, ec)) return read_regular_file(value, kMaxConstraintFileBytes, what);
    return value;
}

}  // namespace

Result<ConstraintSpec> constraint_option(const ParsedArgs& args) {
    const auto grammar = args.get_string("grammar");
    const auto schema = args.get_string("json-schema");
    if (grammar && schema) return Error("--grammar and --json-schema both constrain the output: give one");
    if (grammar) {
        std::string text = TDM_TRY(file_or_text(*grammar, "grammar file"));
        if (text.empty()) return Error("--grammar: the grammar is empty");
        return ConstraintSpec{ConstraintSpec::Kind::grammar, std::move(text), "--grammar"};
    }
    if (schema) {
        std::string text = TDM_TRY(file_or_text(*schema, "JSON schema file"));
        const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (doc.is_discarded() || !(doc.is_object() || doc.is_boolean()))
            return Error::format("--json-schema: '{}' is neither a file nor a JSON schema (an object)",
                                 schema->size() > 80 ? schema->substr(0, 80) + "..." : *schema);
        return ConstraintSpec{ConstraintSpec::Kind::json_schema, std::move(text), "--json-schema"};  // in its own member order
    }
    return ConstraintSpec{};
}

}  // namespace tdm::cli
