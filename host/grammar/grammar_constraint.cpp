// SPDX-License-Identifier: Apache-2.0
// host/grammar/grammar_constraint.cpp: the TokenConstraint of a grammar
// (make_grammar_constraint of grammar.h). Masks are cached per matcher state in a bounded
// LRU shared by a constraint and all its clones: a JSON generation revisits few states
// (inside a string, between members), and the speculative round's clones ask for the
// masks of states the original reaches next. The lazy DFA of token_mask.h is shared too.
// Not here: the matcher (matcher.cpp) and the trie walk (token_mask.cpp).
#include "grammar/grammar.h"
#include "grammar/grammar_rules.h"
#include "grammar/matcher.h"
#include "grammar/token_mask.h"
#include "grammar/token_trie.h"

#include <algorithm>
#include <limits>
#include <list>
#include <mutex>
#include <unordered_map>

namespace tdm {
namespace {

// At most this many masks per constraint family (about 19 KiB each for 150k tokens), and
// at most this many bytes of the state keys they are found by (a state of deep stacks has
// a long key).
constexpr size_t kMaxCachedMasks = 256;
constexpr size_t kMaxCachedKeyBytes = size_t{32} << 20;

// What a constraint and its clones share: the masks of recent states (LRU) and the lazy
// DFA the masks are walked with. Locked: the server may hand clones to other threads.
class MaskCache {
public:
    std::shared_ptr<const TokenBitset> get(const CompiledGrammar& g, const TokenTrie& trie, const MatchState& state,
                                           const std::string& key, MaskWorkspace& ws) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = index_.find(key);
        if (it != index_.end()) {
            lru_.splice(lru_.begin(), lru_, it->second);
            return it->second->second;
        }
        auto mask = std::make_shared<TokenBitset>();
        compute_token_mask(g, trie, state, dfa_, ws, *mask);
        lru_.emplace_front(key, mask);
        index_.emplace(key, lru_.begin());
        key_bytes_ += 2 * key.size();  // the list's copy and the index's
        while (lru_.size() > 1 && (lru_.size() > kMaxCachedMasks || key_bytes_ > kMaxCachedKeyBytes)) {
            key_bytes_ -= 2 * lru_.back().first.size();
            index_.erase(lru_.back().first);
            lru_.pop_back();
        }
        return mask;
    }

private:
    std::mutex mutex_;
    std::list<std::pair<std::string, std::shared_ptr<const TokenBitset>>> lru_;
    std::unordered_map<std::string, decltype(lru_)::iterator> index_;
    size_t key_bytes_ = 0;
    LazyDfa dfa_;
};

class GrammarConstraint final : public TokenConstraint {
public:
    GrammarConstraint(std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenTrie> trie,
                      std::vector<int32_t> eog)
        : grammar_(std::move(grammar)), trie_(std::move(trie)),
          eog_(std::make_shared<const std::vector<int32_t>>(std::move(eog))),
          cache_(std::make_shared<MaskCache>()) {
        initial_match_state(*grammar_, ws_.match, state_);  // compile_gbnf checked that it fits
    }

    void mask(float* logits, int n_vocab) override {
        constexpr float kForbidden = -std::numeric_limits<float>::infinity();
        bool end_ok = !finished_ && accepts_end(state_);
        const TokenBitset* allowed = finished_ ? nullptr : current_mask().get();
        eog_logits_.clear();
        for (int32_t id : *eog_) eog_logits_.push_back(id < n_vocab ? logits[id] : 0.0f);
        for (int i = 0; i < n_vocab; ++i) {
            if (!allowed || i >= trie_->n_vocab() || !test_bit(*allowed, i)) logits[i] = kForbidden;
        }
        // An end token is allowed by the end of the grammar only, even if it is also text.
        for (size_t k = 0; k < eog_->size(); ++k) {
            int32_t id = (*eog_)[k];
            if (id < n_vocab) logits[id] = end_ok ? eog_logits_[k] : kForbidden;
        }
    }

    bool allows(int32_t token) override {
        if (finished_) return false;
        if (is_eog(token)) return accepts_end(state_);
        if (token < 0 || token >= trie_->n_vocab()) return false;
        // From the mask, never from the token's bytes alone: the two agree except where a
        // mask ran out of steps (kMaxMaskSteps), and then allows() must still agree with
        // mask(), or a draft could pass where a plain step would not.
        return test_bit(*current_mask(), token);
    }

    Status advance(int32_t token) override {
        if (!allows(token)) return Error::format("token {} is not allowed by the grammar here", token);
        if (is_eog(token)) {
            finished_ = true;
            return {};
        }
        const std::string& piece = trie_->piece(token);
        MatchState a, b;
        const MatchState* in = &state_;
        MatchState* out = &a;
        for (char c : piece) {
            if (!advance_byte(*grammar_, *in, static_cast<uint8_t>(c), *out, ws_.match))
                return Error::format("token {} is not allowed by the grammar here", token);  // unreachable after allows()
            in = out;
            out = out == &a ? &b : &a;
        }
        state_ = *in;
        mask_.reset();
        return {};
    }

    bool complete() const override { return finished_ || only_end(state_); }

    std::unique_ptr<TokenConstraint> clone() const override {
        return std::unique_ptr<TokenConstraint>(new GrammarConstraint(*this));
    }

private:
    GrammarConstraint(const GrammarConstraint& o)
        : grammar_(o.grammar_), trie_(o.trie_), eog_(o.eog_), cache_(o.cache_), state_(o.state_),
          mask_(o.mask_), finished_(o.finished_) {}

    bool is_eog(int32_t token) const {
        return std::find(eog_->begin(), eog_->end(), token) != eog_->end();
    }

    const std::shared_ptr<const TokenBitset>& current_mask() {
        if (mask_) return mask_;
        state_key(state_, key_);
        mask_ = cache_->get(*grammar_, *trie_, state_, key_, ws_);
        return mask_;
    }

    std::shared_ptr<const CompiledGrammar> grammar_;
    std::shared_ptr<const TokenTrie> trie_;
    std::shared_ptr<const std::vector<int32_t>> eog_;
    std::shared_ptr<MaskCache> cache_;
    MatchState state_;
    std::shared_ptr<const TokenBitset> mask_;  // of state_, once asked for
    bool finished_ = false;                    // an end token was taken
    MaskWorkspace ws_;                         // scratch, not copied
    std::string key_;                          // scratch
    std::vector<float> eog_logits_;            // scratch
};

}  // namespace

Result<std::unique_ptr<TokenConstraint>> make_grammar_constraint(
    std::shared_ptr<const CompiledGrammar> grammar, std::shared_ptr<const TokenTrie> trie,
    std::span<const int32_t> end_of_generation_ids) {
    if (!grammar || !trie) return Error("grammar constraint: no grammar or no token trie");
    for (int32_t id : end_of_generation_ids) {
        if (id < 0 || id >= trie->n_vocab())
            return Error::format("grammar constraint: end-of-generation id {} is outside the vocabulary of {} tokens",
                                 id, trie->n_vocab());
    }
    std::vector<int32_t> eog(end_of_generation_ids.begin(), end_of_generation_ids.end());
    return std::unique_ptr<TokenConstraint>(new GrammarConstraint(std::move(grammar), std::move(trie), std::move(eog)));
}

}  // namespace tdm
