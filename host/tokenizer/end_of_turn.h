/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/end_of_turn.h: the texts of a tokenizer's end-of-generation tokens, which close a
// reply and are not shown to its reader (`tandem chat`, `tandem serve`). Beside the tokenizer
// rather than in a front end, so that the CLI's chat and the serving module (serve/) share it.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace tdm {

class EndOfTurnPieces {
public:
    EndOfTurnPieces() = default;
    explicit EndOfTurnPieces(const Tokenizer& tokenizer);
    bool contains(const std::string& piece) const;

private:
    std::vector<std::string> pieces_;
};

}  // namespace tdm
