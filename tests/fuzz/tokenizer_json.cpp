// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/tokenizer_json.cpp: loading a Hugging Face tokenizer (tokenizer/vocab_json.h):
// the input is tokenizer.json, tokenizer_config.json and a text, split at NUL bytes. A
// tokenizer that loads must encode the text (and a fixed one) to ids inside its vocabulary,
// decode them to valid UTF-8, and stream-decode them to the same text when the tokens'
// bytes are valid UTF-8 (stream.h).
// Seeds: the synthetic Qwen-style tokenizer's files (fuzz_seeds.cpp) and hand-written
// shapes in tests/fuzz/corpus/tokenizer_json/.
#include "fuzz_support.h"
#include "tokenizer/stream.h"
#include "tokenizer/vocab_json.h"

#include <algorithm>
#include <string>

using namespace tdm;

namespace {

void exercise(const Tokenizer& tok, std::string_view text) {
    for (bool add_special : {false, true}) {
        const std::vector<int32_t> ids = tok.encode(text, add_special, /*parse_special=*/true);
        for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < tok.n_vocab());
        const std::string decoded = tok.decode(ids);
        FUZZ_CHECK(fuzz::is_valid_utf8(decoded));
        StreamDecoder stream(tok);
        std::string streamed;
        for (int32_t id : ids) streamed += stream.push(id);
        streamed += stream.flush();
        FUZZ_CHECK(fuzz::is_valid_utf8(streamed));
        std::string pieces;  // the raw bytes: stream and whole decoding agree when they are UTF-8
        for (int32_t id : ids) pieces += tok.token_to_piece(id, true);
        if (fuzz::is_valid_utf8(pieces)) FUZZ_CHECK(streamed == decoded);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(data, size, 3);
    auto tok = load_tokenizer_hf(parts[0], parts[1], "fuzz/tokenizer.json");
    if (!tok.ok()) {
        FUZZ_CHECK(!tok.error().message().empty());
        return 0;
    }
    // The first and last ids and those just outside (a vocabulary may be millions of ids).
    auto touch = [&](int32_t id) {
        (void)tok->token_to_piece(id, true);
        (void)tok->token_text(id);
        (void)tok->is_eog(id);
    };
    for (int32_t id = -1; id <= std::min(tok->n_vocab(), 4096); ++id) touch(id);
    for (int32_t id = std::max(4097, tok->n_vocab() - 16); id <= tok->n_vocab(); ++id) touch(id);
    exercise(*tok, "Hello, world! <|im_end|> 12345 \xc3\xa9\xe2\x96\x81 \n\n  tabs\t");
    exercise(*tok, parts[2]);
    return 0;
}
