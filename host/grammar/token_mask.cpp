// SPDX-License-Identifier: Apache-2.0
// host/grammar/token_mask.cpp: see token_mask.h. Both walks are depth first over an
// explicit stack of frames; the depth is at most TokenTrie::kMaxTokenBytes.
#include "grammar/token_mask.h"

namespace tdm {
namespace {

void set_tokens(const TokenTrie& trie, const TokenTrie::Node& node, TokenBitset& out) {
    for (uint32_t t = node.first_token; t < node.first_token + node.n_tokens; ++t) {
        int32_t id = trie.token_at(t);
        out[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
}

enum class Walk { done, dfa_full, out_of_steps };

// The walk through the DFA.
Walk walk_dfa(const CompiledGrammar& g, const TokenTrie& trie, int32_t start, LazyDfa& dfa,
              MatchWorkspace& ws, uint64_t step_limit, TokenBitset& out) {
    struct Frame { uint32_t node; uint32_t next_edge; int32_t state; };
    std::vector<Frame> stack;
    stack.push_back({TokenTrie::kRoot, 0, start});
    while (!stack.empty()) {
        if (ws.steps > step_limit) return Walk::out_of_steps;
        Frame& f = stack.back();
        const TokenTrie::Node& node = trie.node(f.node);
        if (f.next_edge == node.n_edges) {
            stack.pop_back();
            continue;
        }
        uint32_t e = node.first_edge + f.next_edge++;
        int32_t next = dfa.step(g, f.state, trie.edge_byte(e), ws);
        if (next == LazyDfa::kFull) return Walk::dfa_full;
        if (next == LazyDfa::kDead) continue;
        uint32_t child = trie.edge_child(e);
        const TokenTrie::Node& c = trie.node(child);
        set_tokens(trie, c, out);
        if (c.n_edges) stack.push_back({child, 0, next});
    }
    return Walk::done;
}

// The walk that advances the stacks at every node.
Walk walk_states(const CompiledGrammar& g, const TokenTrie& trie, const MatchState& state,
                 MaskWorkspace& ws, uint64_t step_limit, TokenBitset& out) {
    if (ws.levels.size() < TokenTrie::kMaxTokenBytes + 2) ws.levels.resize(TokenTrie::kMaxTokenBytes + 2);
    struct Frame { uint32_t node; uint32_t next_edge; };
    std::vector<Frame> stack;
    stack.push_back({TokenTrie::kRoot, 0});
    while (!stack.empty()) {
        if (ws.match.steps > step_limit) return Walk::out_of_steps;
        Frame& f = stack.back();
        const TokenTrie::Node& node = trie.node(f.node);
        if (f.next_edge == node.n_edges) {
            stack.pop_back();
            continue;
        }
        uint32_t e = node.first_edge + f.next_edge++;
        size_t depth = stack.size();  // the child's depth
        const MatchState& in = depth == 1 ? state : ws.levels[depth - 1];
        if (!advance_byte(g, in, trie.edge_byte(e), ws.levels[depth], ws.match)) continue;
        uint32_t child = trie.edge_child(e);
        const TokenTrie::Node& c = trie.node(child);
        set_tokens(trie, c, out);
        if (c.n_edges) stack.push_back({child, 0});
    }
    return Walk::done;
}

}  // namespace

int32_t LazyDfa::intern(const MatchState& s) {
    state_key(s, key_);
    auto it = ids_.find(key_);
    if (it != ids_.end()) return it->second;
    const size_t bytes = 4 * (s.positions.size() + s.ends.size()) + key_.size();
    if (states_.size() >= kMaxStates || bytes_ + bytes > kMaxBytes) return kFull;
    bytes_ += bytes;
    int32_t id = static_cast<int32_t>(states_.size());
    states_.push_back(s);
    next_.resize(next_.size() + 256, kUnknown);
    ids_.emplace(key_, id);
    return id;
}

int32_t LazyDfa::step(const CompiledGrammar& g, int32_t id, uint8_t b, MatchWorkspace& ws) {
    int32_t& slot = next_[static_cast<size_t>(id) * 256 + b];
    if (slot != kUnknown) return slot;
    if (!advance_byte(g, states_[static_cast<size_t>(id)], b, scratch_, ws)) {
        next_[static_cast<size_t>(id) * 256 + b] = kDead;
        return kDead;
    }
    int32_t to = intern(scratch_);  // may grow next_: index again below
    if (to != kFull) next_[static_cast<size_t>(id) * 256 + b] = to;
    return to;
}

void LazyDfa::clear() {
    bytes_ = 0;
    states_.clear();
    next_.clear();
    ids_.clear();
}

bool compute_token_mask(const CompiledGrammar& g, const TokenTrie& trie, const MatchState& state,
                        LazyDfa& dfa, MaskWorkspace& ws, TokenBitset& out) {
    const uint64_t step_limit = ws.match.steps + kMaxMaskSteps;
    for (int attempt = 0; attempt < 2; ++attempt) {
        out.assign((static_cast<size_t>(trie.n_vocab()) + 63) / 64, 0);
        int32_t start = dfa.intern(state);
        if (start == LazyDfa::kFull) {
            dfa.clear();
            continue;
        }
        Walk w = walk_dfa(g, trie, start, dfa, ws.match, step_limit, out);
        if (w != Walk::dfa_full) return w == Walk::done;
        dfa.clear();  // and walk again with room for this mask's states
    }
    out.assign(out.size(), 0);
    return walk_states(g, trie, state, ws, step_limit, out) == Walk::done;
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
