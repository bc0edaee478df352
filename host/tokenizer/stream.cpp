// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/stream.cpp: StreamDecoder. Keeps the bytes of an incomplete trailing
// character and emits everything before it (llama.cpp server's validate_utf8 idea, with
// a strict check of the held-back bytes instead of a look at lead bytes only).
#include "tokenizer/stream.h"

#include "tokenizer/unicode.h"

namespace tdm {

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special)
    : tok_(&tok),
      skip_special_(skip_special),
      strip_space_(tok.vocab().add_space_prefix && tok.vocab().model != VocabModel::byte_bpe) {}

std::string StreamDecoder::push(int32_t id) {
    std::string piece = tok_->token_to_piece(id, !skip_special_);
    if (piece.empty()) return {};
    if (at_start_) {
        at_start_ = false;
        if (strip_space_ && piece[0] == ' ') piece.erase(0, 1);  // as Tokenizer::decode
    }
    pending_ += piece;
    size_t n = unicode::complete_prefix_length(pending_);
    if (n == 0) return {};
    std::string out = unicode::replace_invalid_lossy(std::string_view(pending_).substr(0, n));
    pending_.erase(0, n);
    return out;
}

std::string StreamDecoder::flush() {
    std::string out = unicode::replace_invalid_lossy(pending_);
    pending_.clear();
    at_start_ = true;
    return out;
}

}  // namespace tdm
