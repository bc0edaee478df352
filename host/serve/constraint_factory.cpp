// SPDX-License-Identifier: Apache-2.0
// host/serve/constraint_factory.cpp: a tokenizer's end-of-generation ids, which every
// constraint is built with (the grammar engine's side is in serve/grammar_bridge.cpp).
#include "serve/constraint_factory.h"

namespace tdm {

std::vector<int32_t> eog_tokens(const Tokenizer& tokenizer) {
    std::vector<int32_t> out;
    for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
        if (tokenizer.is_eog(id)) out.push_back(id);
    return out;
}

}  // namespace tdm
