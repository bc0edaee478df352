// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/special_tokens.cpp: the byte trie behind SpecialTokenMatcher.
#include "tokenizer/special_tokens.h"

namespace tdm {

SpecialTokenMatcher::SpecialTokenMatcher() {
    root_children_.fill(-1);
    nodes_.emplace_back();  // root
}

SpecialTokenMatcher::SpecialTokenMatcher(const Vocab& v) : SpecialTokenMatcher() {
    for (int32_t id = 0; id < v.n_tokens(); ++id) {
        TokenType t = v.types[id];
        if (t != TokenType::control && t != TokenType::unknown && t != TokenType::user_defined)
            continue;
        const std::string& text = v.tokens[id];
        if (text.empty()) continue;
        int32_t node = 0;
        for (char ch : text) {
            uint8_t b = static_cast<uint8_t>(ch);
            int32_t next = child(node, b);
            if (next < 0) {
                next = static_cast<int32_t>(nodes_.size());
                Node n;
                n.byte = b;
                if (node == 0) {
                    root_children_[b] = next;
                } else {
                    n.next_sibling = nodes_[node].first_child;
                    nodes_[node].first_child = next;
                }
                nodes_.push_back(n);
            }
            node = next;
        }
        // Two tokens with the same text: the later id wins, as in llama.cpp's token_to_id.
        nodes_[node].id = id;
        nodes_[node].always = t == TokenType::user_defined;
        ++n_tokens_;
    }
}

int32_t SpecialTokenMatcher::child(int32_t node, uint8_t b) const {
    if (node == 0) return root_children_[b];
    for (int32_t c = nodes_[node].first_child; c >= 0; c = nodes_[c].next_sibling)
        if (nodes_[c].byte == b) return c;
    return -1;
}

void SpecialTokenMatcher::split(std::string_view text, bool parse_special,
                                std::vector<Fragment>& out) const {
    if (n_tokens_ == 0) {
        if (!text.empty()) out.push_back({-1, text});
        return;
    }
    size_t raw_start = 0, pos = 0;
    while (pos < text.size()) {
        int32_t best_id = -1;
        size_t best_len = 0;
        int32_t node = 0;
        for (size_t i = pos; i < text.size(); ++i) {
            node = child(node, static_cast<uint8_t>(text[i]));
            if (node < 0) break;
            const Node& n = nodes_[node];
            if (n.id >= 0 && (n.always || parse_special)) {
                best_id = n.id;
                best_len = i + 1 - pos;
            }
        }
        if (best_id < 0) {
            ++pos;
            continue;
        }
        if (pos > raw_start) out.push_back({-1, text.substr(raw_start, pos - raw_start)});
        out.push_back({best_id, text.substr(pos, best_len)});
        pos += best_len;
        raw_start = pos;
    }
    if (raw_start < text.size()) out.push_back({-1, text.substr(raw_start)});
}

}  // namespace tdm
