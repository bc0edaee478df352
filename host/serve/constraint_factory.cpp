// SPDX-License-Identifier: Apache-2.0
// host/serve/constraint_factory.cpp: the factory around make_constraint() (which
// serve/grammar_bridge.cpp defines).
#include "serve/constraint_factory.h"

namespace tdm {

std::vector<int32_t> eog_tokens(const Tokenizer& tokenizer) {
    std::vector<int32_t> out;
    for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
        if (tokenizer.is_eog(id)) out.push_back(id);
    return out;
}

ConstraintFactory constraint_factory(const Tokenizer& tokenizer) {
    return [&tokenizer, eog = eog_tokens(tokenizer)](const ConstraintSpec& spec) {
        return make_constraint(spec, tokenizer, eog);
    };
}

}  // namespace tdm
