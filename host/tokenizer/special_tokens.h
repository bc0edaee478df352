/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/special_tokens.h: splitting added/special tokens out of raw text before
// any normalisation or merging (docs/tokenizers.md §2). A byte trie gives HF's
// leftmost-longest matching in O(text * longest token), independent of how many
// tokens there are (Gemma 3 has 6,415). Not here: what happens to the text between them.
#pragma once

#include "tokenizer/vocab.h"

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tdm {

class SpecialTokenMatcher {
public:
    // Indexes every control, unknown and user-defined token of the vocabulary.
    explicit SpecialTokenMatcher(const Vocab& v);
    SpecialTokenMatcher();

    // One piece of the input: either a token (id >= 0) or raw text (id == -1).
    struct Fragment {
        int32_t id;
        std::string_view text;
    };

    // Leftmost-longest split of `text`. User-defined tokens always match (llama.cpp:
    // "user-defined tokens are still pre-tokenized before everything else"); control and
    // unknown tokens only when parse_special is set. Appends to `out`.
    void split(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;

    size_t size() const { return n_tokens_; }

private:
    struct Node {
        int32_t first_child = -1;  // children form a singly linked list (most nodes have one)
        int32_t next_sibling = -1;
        int32_t id = -1;           // token ending here, or -1
        uint8_t byte = 0;
        bool always = false;       // the token is user-defined
    };
    int32_t child(int32_t node, uint8_t b) const;
    std::vector<Node> nodes_;
    std::array<int32_t, 256> root_children_;  // the root is hit at every text position: index it directly
    size_t n_tokens_ = 0;
};

}  // namespace tdm
