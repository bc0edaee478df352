// SPDX-License-Identifier: Apache-2.0
// host/grammar/token_mask.cpp: see token_mask.h. The walk is depth first over an explicit
// stack of (node, next edge) frames; its depth is at most TokenTrie::kMaxTokenBytes.
#include "grammar/token_mask.h"

namespace tdm {

void compute_token_mask(const CompiledGrammar& g, const TokenTrie& trie, const MatchState& state,
                        MaskWorkspace& ws, TokenBitset& out) {
    out.assign((static_cast<size_t>(trie.n_vocab()) + 63) / 64, 0);
    if (ws.levels.size() < TokenTrie::kMaxTokenBytes + 2) ws.levels.resize(TokenTrie::kMaxTokenBytes + 2);
    struct Frame { uint32_t node; uint32_t next_edge; };
    std::vector<Frame> stack;
    stack.push_back({TokenTrie::kRoot, 0});
    const MatchState* root_state = &state;
    while (!stack.empty()) {
        Frame& f = stack.back();
        const TokenTrie::Node& node = trie.node(f.node);
        if (f.next_edge == node.n_edges) {
            stack.pop_back();
            continue;
        }
        uint32_t e = node.first_edge + f.next_edge++;
        size_t depth = stack.size();  // the child's depth
        const MatchState& in = depth == 1 ? *root_state : ws.levels[depth - 1];
        MatchState& next = ws.levels[depth];
        if (!advance_byte(g, in, trie.edge_byte(e), next, ws.match)) continue;
        uint32_t child = trie.edge_child(e);
        const TokenTrie::Node& c = trie.node(child);
        for (uint32_t t = c.first_token; t < c.first_token + c.n_tokens; ++t) {
            int32_t id = trie.token_at(t);
            out[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
        }
        if (c.n_edges) stack.push_back({child, 0});
    }
}

bool token_allowed(const CompiledGrammar& g, const TokenTrie& trie, const MatchState& state,
                   int32_t id, MatchWorkspace& ws) {
    if (id < 0 || id >= trie.n_vocab()) return false;
    const std::string& piece = trie.piece(id);
    if (piece.empty()) return false;
    MatchState a, b;
    const MatchState* in = &state;
    MatchState* out = &a;
    for (char c : piece) {
        if (!advance_byte(g, *in, static_cast<uint8_t>(c), *out, ws)) return false;
        in = out;
        out = out == &a ? &b : &a;
    }
    return true;
}

}  // namespace tdm
