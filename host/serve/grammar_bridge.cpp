// SPDX-License-Identifier: Apache-2.0
// host/serve/grammar_bridge.cpp: make_constraint() (serve/constraint_factory.h), the one
// place that calls the grammar engine. This build has none: every constraint is refused
// with a message saying so (the server answers 400 and `tandem run` stops with it).
#include "serve/constraint_factory.h"

namespace tdm {

Result<std::unique_ptr<TokenConstraint>> make_constraint(const ConstraintSpec&, const Tokenizer&,
                                                         std::span<const int32_t>) {
    return Error("constrained output (JSON schemas, json_object, grammars) is not built into this tandem");
}

}  // namespace tdm
