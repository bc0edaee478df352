/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/constraint_spec.h: what a request (a server request's response_format,
// grammar or json_schema; `tandem run --grammar/--json-schema`) asks its output to be, as
// text: what the grammar engine turns into a TokenConstraint (serve/constraint_factory.h).
// Not here: reading it from a request (serve/constraint_request.h), the grammar itself.
#pragma once

#include <string>

namespace tdm {

struct ConstraintSpec {
    enum class Kind {
        none,         // anything
        json_object,  // any JSON object (OpenAI's response_format json_object)
        json_schema,  // JSON valid against the schema in `text`
        grammar,      // a sentence of the GBNF grammar in `text` (llama.cpp's grammar format)
    };
    Kind kind = Kind::none;
    std::string text;  // json_schema: the schema as JSON; grammar: the GBNF text; else empty
    // Where it came from ("response_format", "grammar", "json_schema", "--grammar"): what an
    // error about it names.
    std::string origin;

    bool any() const { return kind != Kind::none; }
};

}  // namespace tdm
