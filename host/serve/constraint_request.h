/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/constraint_request.h: a request's output constraint: read from its body
// (OpenAI's response_format, llama-server's grammar and json_schema) and built with the
// server's factory (serve/constraint_factory.h).
// Not here: the grammar engine, the rest of the request (serve/openai_request.h).
#pragma once

#include <cstddef>
#include <memory>

#include <nlohmann/json_fwd.hpp>

#include "sampling/token_constraint.h"
#include "serve/api_error.h"
#include "serve/constraint_factory.h"
#include "serve/constraint_spec.h"

namespace tdm::server {

// Reads the constraint fields of a request body (a JSON object):
//   "response_format": {"type": "text"}                        -> none
//   "response_format": {"type": "json_object"}                 -> json_object
//   "response_format": {"type": "json_object", "schema": {..}} -> json_schema (llama-server)
//   "response_format": {"type": "json_schema", "json_schema": {"name": .., "schema": {..}, "strict": ..}}
//   "grammar": "GBNF text" (llama-server; "" = none)           -> grammar
//   "json_schema": {..} (llama-server)                          -> json_schema
// At most one of them may ask for something; a schema or grammar longer than `max_bytes`
// is refused. Whether the schema or grammar is one the engine supports is the factory's
// question (build_constraint).
ApiResult<ConstraintSpec> read_constraint(const nlohmann::json& body, size_t max_bytes);

// A json_schema `spec` read by read_constraint() takes its schema's text from `ordered`, the
// same body parsed in member order (serve/ordered_body.h), so the output's members follow
// the schema's order as llama.cpp's do; unchanged if the schema is not found there.
void keep_schema_order(const nlohmann::ordered_json& ordered, ConstraintSpec& spec);

// The request's constraint in its start state (null for none), or a 400 naming the field it
// came from: the factory's refusal (an unsupported schema keyword, a grammar's syntax
// error), or that this server takes no constraints (an empty factory).
ApiResult<std::shared_ptr<const TokenConstraint>> build_constraint(const ConstraintSpec& spec,
                                                                   const ConstraintFactory& factory);

}  // namespace tdm::server
