// SPDX-License-Identifier: Apache-2.0
// host/grammar/token_trie.cpp: see token_trie.h. Built from the pieces sorted bytewise:
// the tokens under one node are then a contiguous range, split by the byte at the node's
// depth, breadth first (no recursion).
#include "grammar/token_trie.h"

#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <deque>

namespace tdm {

std::shared_ptr<const TokenTrie> TokenTrie::from_pieces(std::vector<std::string> pieces) {
    std::shared_ptr<TokenTrie> t(new TokenTrie());
    t->pieces_ = std::move(pieces);
    for (std::string& p : t->pieces_) {
        if (p.size() > kMaxTokenBytes) p.clear();
    }
    t->build();
    return t;
}

std::shared_ptr<const TokenTrie> TokenTrie::from_tokenizer(const Tokenizer& tok) {
    std::vector<std::string> pieces(static_cast<size_t>(tok.n_vocab()));
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        TokenType type = tok.token_type(id);
        if (type == TokenType::control || type == TokenType::unknown || type == TokenType::unused) continue;
        pieces[static_cast<size_t>(id)] = tok.token_to_piece(id, /*special=*/false);
    }
    return from_pieces(std::move(pieces));
}

void TokenTrie::build() {
    std::vector<int32_t> order;
    for (size_t id = 0; id < pieces_.size(); ++id) {
        if (!pieces_[id].empty()) order.push_back(static_cast<int32_t>(id));
    }
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
        return pieces_[static_cast<size_t>(a)] < pieces_[static_cast<size_t>(b)];
    });
    struct Pending { uint32_t node; size_t lo, hi, depth; };  // order[lo, hi) under node
    std::deque<Pending> queue;
    nodes_.push_back({0, 0, 0, 0});
    queue.push_back({kRoot, 0, order.size(), 0});
    while (!queue.empty()) {
        Pending p = queue.front();
        queue.pop_front();
        size_t i = p.lo;
        // Tokens that end here sort first (a prefix sorts before its extensions).
        nodes_[p.node].first_token = static_cast<uint32_t>(tokens_.size());
        while (i < p.hi && pieces_[static_cast<size_t>(order[i])].size() == p.depth) tokens_.push_back(order[i++]);
        nodes_[p.node].n_tokens = static_cast<uint32_t>(tokens_.size()) - nodes_[p.node].first_token;
        nodes_[p.node].first_edge = static_cast<uint32_t>(edge_bytes_.size());
        while (i < p.hi) {
            uint8_t byte = static_cast<uint8_t>(pieces_[static_cast<size_t>(order[i])][p.depth]);
            size_t j = i;
            while (j < p.hi && static_cast<uint8_t>(pieces_[static_cast<size_t>(order[j])][p.depth]) == byte) ++j;
            uint32_t child = static_cast<uint32_t>(nodes_.size());
            nodes_.push_back({0, 0, 0, 0});
            edge_bytes_.push_back(byte);
            edge_children_.push_back(child);
            queue.push_back({child, i, j, p.depth + 1});
            i = j;
        }
        nodes_[p.node].n_edges = static_cast<uint32_t>(edge_bytes_.size()) - nodes_[p.node].first_edge;
    }
}

std::shared_ptr<const TokenTrie> build_token_trie(const Tokenizer& tokenizer) {
    return TokenTrie::from_tokenizer(tokenizer);
}

}  // namespace tdm
