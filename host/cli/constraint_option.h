/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/constraint_option.h: `tandem run --grammar FILE|TEXT` and `--json-schema
// FILE|TEXT`: the output constraint the options ask for, as a ConstraintSpec
// (serve/constraint_spec.h) that the grammar engine's factory (serve/constraint_factory.h)
// turns into the constraint the engine applies.
#pragma once

#include "cli/args.h"
#include "common/error.h"
#include "serve/constraint_spec.h"

namespace tdm::cli {

// What --grammar or --json-schema asks for (kind none without them). Each takes a file,
// when one of that name exists, or the text itself; a schema must be JSON. Both at once
// are refused.
Result<ConstraintSpec> constraint_option(const ParsedArgs& args);

}  // namespace tdm::cli
