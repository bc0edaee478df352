/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/stream.h: incremental detokenization for generated tokens (spec
// docs/tokenizers.md §5.3). Output never ends inside a UTF-8 character: bytes of a character
// split across tokens (byte-level "ðŁ" = F0 9F, or <0xF0> byte-fallback tokens) are held
// back until the character is complete. Not here: stop strings (the server's job).
//
//   StreamDecoder sd(tok);
//   for (int32_t id : generated) send(sd.push(id));
//   send(sd.flush());
#pragma once

#include "tokenizer/tokenizer.h"

#include <cstdint>
#include <string>

namespace tdm {

class StreamDecoder {
public:
    // `tok` must outlive the decoder. skip_special as in Tokenizer::decode.
    explicit StreamDecoder(const Tokenizer& tok, bool skip_special = false);

    // Adds one token; returns the text that became complete (possibly ""). Always valid
    // UTF-8: bytes that can no longer form a character become U+FFFD, as in HF's lossy
    // decoding. For valid output the concatenation of all push() and flush() results
    // equals Tokenizer::decode() of the same ids.
    std::string push(int32_t id);

    // Ends the stream: returns held-back bytes (an unfinished character becomes U+FFFD)
    // and resets the decoder for a new stream.
    std::string flush();

    // Bytes held back, waiting for the rest of a character.
    size_t pending_bytes() const { return pending_.size(); }

private:
    const Tokenizer* tok_;
    bool skip_special_;
    bool strip_space_;   // SPM with add_space_prefix: the first character is not text
    bool at_start_ = true;
    std::string pending_;
};

}  // namespace tdm
