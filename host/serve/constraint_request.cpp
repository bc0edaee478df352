// SPDX-License-Identifier: Apache-2.0
// host/serve/constraint_request.cpp: a request's constraint fields (see constraint_request.h).
#include "serve/constraint_request.h"

#include "serve/json_member.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <utility>

namespace tdm::server {

using json = nlohmann::json;

namespace {

// A schema: a JSON object (or true/false, which JSON Schema allows), kept as its text.
ApiResult<ConstraintSpec> schema_constraint(const json& schema, const std::string& param, size_t max_bytes,
                                      std::string origin) {
    if (!schema.is_object() && !schema.is_boolean())
        return ApiError::invalid(param, fmt::format("'{}' must be a JSON schema (an object)", param));
    ConstraintSpec spec{ConstraintSpec::Kind::json_schema, schema.dump(), std::move(origin)};
    if (spec.text.size() > max_bytes)
        return ApiError::invalid(param, fmt::format("'{}' is {} bytes; at most {} are accepted", param,
                                                    spec.text.size(), max_bytes));
    return spec;
}

ApiResult<ConstraintSpec> response_format_constraint(const json& format, size_t max_bytes) {
    const std::string origin = "response_format";
    if (!format.is_object())
        return ApiError::invalid(origin, "'response_format' must be an object like {\"type\": \"json_object\"}");
    const json* type = json_member(format, "type");
    if (!type) return ApiError::invalid("response_format.type", "'response_format.type' is missing");
    if (*type == "text") return ConstraintSpec{};
    if (*type == "json_object") {
        if (const json* schema = json_member(format, "schema"))  // llama-server's form
            return schema_constraint(*schema, "response_format.schema", max_bytes, origin);
        return ConstraintSpec{ConstraintSpec::Kind::json_object, "", origin};
    }
    if (*type == "json_schema") {
        const json* js = json_member(format, "json_schema");
        if (!js || !js->is_object())
            return ApiError::invalid("response_format.json_schema",
                                     "'response_format.json_schema' must be an object with the 'schema'");
        const json* schema = json_member(*js, "schema");
        if (!schema)
            return ApiError::invalid("response_format.json_schema.schema",
                                     "'response_format.json_schema.schema' is missing");
        return schema_constraint(*schema, "response_format.json_schema.schema", max_bytes, origin);
    }
    return ApiError::invalid("response_format.type",
                             fmt::format("'response_format.type' must be text, json_object or json_schema, not {}",
                                         type->dump()));
}

}  // namespace

ApiResult<ConstraintSpec> read_constraint(const json& body, size_t max_bytes) {
    ConstraintSpec out;
    const auto take = [&](ApiResult<ConstraintSpec> got) -> std::optional<ApiError> {
        if (!got.ok()) return got.error();
        if (!got->any()) return std::nullopt;
        if (out.any())
            return ApiError::invalid(got->origin, fmt::format("'{}' and '{}' both constrain the output: send one",
                                                              out.origin, got->origin));
        out = std::move(*got);
        return std::nullopt;
    };
    if (const json* format = json_member(body, "response_format"))
        if (auto e = take(response_format_constraint(*format, max_bytes))) return *e;
    if (const json* grammar = json_member(body, "grammar")) {
        if (!grammar->is_string()) return ApiError::invalid("grammar", "'grammar' must be a string (GBNF)");
        const auto& text = grammar->get_ref<const std::string&>();
        if (text.size() > max_bytes)
            return ApiError::invalid("grammar", fmt::format("'grammar' is {} bytes; at most {} are accepted",
                                                            text.size(), max_bytes));
        if (!text.empty())
            if (auto e = take(ConstraintSpec{ConstraintSpec::Kind::grammar, text, "grammar"})) return *e;
    }
    if (const json* schema = json_member(body, "json_schema"))
        if (auto e = take(schema_constraint(*schema, "json_schema", max_bytes, "json_schema"))) return *e;
    return out;
}

void keep_schema_order(const nlohmann::ordered_json& ordered, ConstraintSpec& spec) {
    if (spec.kind != ConstraintSpec::Kind::json_schema || !ordered.is_object()) return;
    const nlohmann::ordered_json* schema = nullptr;
    if (spec.origin == "json_schema") {
        schema = json_member(&ordered, "json_schema");
    } else if (const auto* format = json_member(&ordered, "response_format")) {
        // the same field response_format_constraint() read, by the same type rule
        const auto* type = json_member(format, "type");
        if (type && *type == "json_object") schema = json_member(format, "schema");  // llama-server's form
        else if (type && *type == "json_schema") schema = json_member(json_member(format, "json_schema"), "schema");
    }
    if (!schema) return;
    std::string text = schema->dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
    if (text.size() == spec.text.size()) spec.text = std::move(text);  // the same schema, members reordered
}

ApiResult<std::shared_ptr<const TokenConstraint>> build_constraint(const ConstraintSpec& spec,
                                                                   const ConstraintFactory& factory) {
    if (!spec.any()) return std::shared_ptr<const TokenConstraint>();
    if (!factory)
        return ApiError::invalid(spec.origin, fmt::format("'{}': this server does not constrain its output "
                                                          "(no grammar engine)", spec.origin));
    auto made = factory(spec);
    if (!made.ok()) return ApiError::invalid(spec.origin, made.error().message());
    return std::shared_ptr<const TokenConstraint>(std::move(made).value());
}

}  // namespace tdm::server
