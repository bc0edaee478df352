// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/end_of_turn.cpp
#include "tokenizer/end_of_turn.h"

#include <algorithm>

namespace tdm {

EndOfTurnPieces::EndOfTurnPieces(const Tokenizer& tokenizer) {
    for (int32_t id = 0; id < tokenizer.n_vocab(); ++id)
        if (tokenizer.is_eog(id))
            if (std::string piece = tokenizer.token_to_piece(id); !piece.empty()) pieces_.push_back(std::move(piece));
}

bool EndOfTurnPieces::contains(const std::string& piece) const {
    return std::find(pieces_.begin(), pieces_.end(), piece) != pieces_.end();
}

}  // namespace tdm
