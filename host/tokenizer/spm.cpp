// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/spm.cpp: port of llama.cpp's llm_tokenizer_spm_session (llama-vocab.cpp).
#include "tokenizer/spm.h"

#include <algorithm>
#include <queue>

namespace tdm {
namespace {

struct Symbol {
    int32_t prev;
    int32_t next;
    size_t offset;  // into the fragment
    size_t n;       // bytes; 0 once merged into its left neighbour
};

struct Bigram {
    int32_t left;
    int32_t right;
    float score;
    size_t size;  // bytes of the merged text, to detect stale entries
};

// Highest score first; equal scores: the leftmost pair first (llm_bigram_spm::comparator).
struct BigramOrder {
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

class Session {
public:
    Session(const SpmVocabView& v, std::string_view text) : v_(v), text_(text) {}

    void run(std::vector<int32_t>& out) {
        size_t offs = 0;
        int32_t index = 0;
        while (offs < text_.size()) {
            size_t len = utf8_len(static_cast<uint8_t>(text_[offs]));
            size_t n = std::min(len, text_.size() - offs);
            symbols_.push_back({index - 1, offs + n == text_.size() ? -1 : index + 1, offs, n});
            offs += n;
            ++index;
        }
        for (int32_t i = 1; i < static_cast<int32_t>(symbols_.size()); ++i) try_add_bigram(i - 1, i);
        while (!queue_.empty()) {
            Bigram b = queue_.top();
            queue_.pop();
            Symbol& l = symbols_[b.left];
            Symbol& r = symbols_[b.right];
            if (l.n == 0 || r.n == 0 || l.n + r.n != b.size) continue;  // stale
            l.n += r.n;
            r.n = 0;
            l.next = r.next;
            if (r.next >= 0) symbols_[r.next].prev = b.left;
            try_add_bigram(l.prev, b.left);
            try_add_bigram(b.left, l.next);
        }
        for (int32_t i = symbols_.empty() ? -1 : 0; i >= 0; i = symbols_[i].next)
            resegment(symbols_[i], out);
    }

private:
    static size_t utf8_len(uint8_t b) {
        // llama.cpp's unicode_len_utf8: by the lead byte alone (input is valid UTF-8).
        if (b < 0x80) return 1;
        if ((b & 0xE0) == 0xC0) return 2;
        if ((b & 0xF0) == 0xE0) return 3;
        if ((b & 0xF8) == 0xF0) return 4;
        return 1;
    }

    std::string_view text_of(const Symbol& s) const { return text_.substr(s.offset, s.n); }

    void try_add_bigram(int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        std::string_view text =
            text_.substr(symbols_[left].offset, symbols_[left].n + symbols_[right].n);
        int32_t id = v_.index.find(text);
        if (id < 0) return;
        queue_.push({left, right, v_.scores[id], text.size()});
    }

    // A final symbol that is a token is emitted as such; anything else becomes byte
    // tokens. llama.cpp's resegment() also keeps a rev_merge map to split a non-token
    // symbol back into the halves it was merged from, but a merge only ever forms a text
    // that is a token (try_add_bigram checks), so a non-token symbol is always a single
    // unmerged character and that branch can never run; it is left out here.
    void resegment(const Symbol& s, std::vector<int32_t>& out) {
        std::string_view text = text_of(s);
        int32_t id = v_.index.find(text);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
        for (char c : text) {
            int32_t b = v_.byte_ids[static_cast<uint8_t>(c)];
            if (b < 0) b = v_.unk;
            if (b >= 0) out.push_back(b);
        }
    }

    const SpmVocabView& v_;
    std::string_view text_;
    std::vector<Symbol> symbols_;
    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue_;
};

}  // namespace

void spm_tokenize(const SpmVocabView& v, std::string_view text, std::vector<int32_t>& out) {
    Session(v, text).run(out);
}

}  // namespace tdm
