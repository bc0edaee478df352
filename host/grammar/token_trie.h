/* SPDX-License-Identifier: Apache-2.0 */
// host/grammar/token_trie.h: a vocabulary's token byte strings in a prefix tree, so that a
// token mask walks each shared prefix once (token_mask.cpp). Immutable once built; one
// per tokenizer, shared by every grammar constraint.
// Not here: matching (matcher.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tdm {

class Tokenizer;

class TokenTrie {
public:
    // Tokens longer than this are left out (never allowed): they bound the walk's depth.
    static constexpr size_t kMaxTokenBytes = 1024;

    // pieces[id]: the bytes token id stands for; "" for a token a grammar never allows.
    static std::shared_ptr<const TokenTrie> from_pieces(std::vector<std::string> pieces);
    // From a tokenizer: each token's raw bytes (Tokenizer::token_to_piece, so byte-level
    // BPE and SPM byte-fallback pieces are bytes); control, unknown and unused tokens "".
    static std::shared_ptr<const TokenTrie> from_tokenizer(const Tokenizer& tok);

    struct Node {
        uint32_t first_edge;   // edges [first_edge, first_edge + n_edges), by byte ascending
        uint32_t n_edges;
        uint32_t first_token;  // ids of the tokens ending here: tokens_[first_token, +n_tokens)
        uint32_t n_tokens;
    };

    int32_t n_vocab() const { return static_cast<int32_t>(pieces_.size()); }
    const std::string& piece(int32_t id) const { return pieces_[static_cast<size_t>(id)]; }
    size_t n_nodes() const { return nodes_.size(); }

    const Node& node(uint32_t i) const { return nodes_[i]; }
    uint8_t edge_byte(uint32_t e) const { return edge_bytes_[e]; }
    uint32_t edge_child(uint32_t e) const { return edge_children_[e]; }
    int32_t token_at(uint32_t i) const { return tokens_[i]; }
    static constexpr uint32_t kRoot = 0;

private:
    TokenTrie() = default;
    void build();

    std::vector<std::string> pieces_;
    std::vector<Node> nodes_;
    std::vector<uint8_t> edge_bytes_;
    std::vector<uint32_t> edge_children_;
    std::vector<int32_t> tokens_;
};

}  // namespace tdm
