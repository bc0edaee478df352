// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/pretokenize.cpp: hand-written equivalents of the pre-tokenizer regexes
// (docs/tokenizers.md §3.2). Each splitter is a port of llama.cpp's
// unicode_regex_split_custom_{qwen2,qwen35,llama3,gpt2} and tries the regex alternatives
// in order at each position, so the comments quote the alternative being matched.
// No std::regex: it is slow and has no Unicode classes.
#include "tokenizer/pretokenize.h"

#include "tokenizer/unicode.h"

#include <utility>

namespace tdm {
namespace {

// The text decoded once: code points, their classes and byte offsets (off[n] = size).
struct Cps {
    std::vector<uint32_t> cp;
    std::vector<unicode::CpClass> cls;
    std::vector<size_t> off;

    explicit Cps(std::string_view text) {
        cp.reserve(text.size());
        off.reserve(text.size() + 1);
        size_t pos = 0;
        while (pos < text.size()) {
            off.push_back(pos);
            uint32_t c;
            if (!unicode::decode(text, pos, c)) c = unicode::kReplacement;  // callers repair first
            cp.push_back(c);
        }
        off.push_back(text.size());
        cls.reserve(cp.size());
        for (uint32_t c : cp) cls.push_back(unicode::classify(c));
    }
};

using Range = std::pair<size_t, size_t>;  // [first, last) code point indexes

// Collects piece ends, dropping empty pieces (llama.cpp's _add_token does the same).
struct Ends {
    std::vector<Range>& out;
    size_t prev;
    void add(size_t end) {
        if (end > prev) out.emplace_back(prev, end);
        prev = end;
    }
};

uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }

bool is_cr_lf(uint32_t c) { return c == '\r' || c == '\n'; }

// Length of a contraction 's 't 're 've 'm 'll 'd at pos (0 if none). Case-insensitive
// means ASCII case, as in llama.cpp. HF's (?i:...) uses Unicode case folding, under which
// only U+017F LONG S also matches ('s'); so "'ſ" is the one input where the splitters
// differ from tokenizer.json (checked against Python `regex` on 30,000 random strings).
size_t contraction(const Cps& c, size_t pos, size_t e, bool any_case) {
    if (c.cp[pos] != '\'' || pos + 1 >= e) return 0;
    auto at = [&](size_t i) { return any_case ? ascii_lower(c.cp[i]) : c.cp[i]; };
    uint32_t n1 = at(pos + 1);
    if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') return 2;
    if (pos + 2 >= e) return 0;
    uint32_t n2 = at(pos + 2);
    if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) return 3;
    return 0;
}

// qwen2:  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// qwen35: same with [\p{L}\p{M}] as the letter class (and \p{M} excluded from the symbol run)
// llama3: qwen2 with \p{N}{1,3}
void split_qwen(const Cps& c, Range r, bool marks_are_letters, size_t max_digits,
                std::vector<Range>& out) {
    const size_t e = r.second;
    auto letter = [&](size_t p) {
        return p < e && (c.cls[p].letter || (marks_are_letters && c.cls[p].mark));
    };
    auto number = [&](size_t p) { return p < e && c.cls[p].number; };
    auto space = [&](size_t p) { return p < e && c.cls[p].space; };
    auto symbol = [&](size_t p) { return p < e && !space(p) && !letter(p) && !number(p); };

    Ends ends{out, r.first};
    size_t pos = r.first;
    while (pos < e) {
        const uint32_t cp = c.cp[pos];
        // (?i:'s|'t|'re|'ve|'m|'ll|'d)
        if (size_t n = contraction(c, pos, e, /*any_case=*/true)) {
            ends.add(pos += n);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+ : one optional non-letter prefix, then letters
        if (!is_cr_lf(cp) && !number(pos) && (letter(pos) || letter(pos + 1))) {
            ++pos;
            while (letter(pos)) ++pos;
            ends.add(pos);
            continue;
        }
        // \p{N} (qwen2, qwen35) or \p{N}{1,3} (llama3): runs cut every max_digits digits
        if (number(pos)) {
            size_t ini = pos;
            while (number(pos)) {
                if (++pos - ini >= max_digits) {
                    ends.add(pos);
                    ini = pos;
                }
            }
            ends.add(pos);
            continue;
        }
        // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
        size_t q = cp == ' ' ? pos + 1 : pos;
        if (symbol(q)) {
            pos = q;
            while (symbol(pos)) ++pos;
            while (pos < e && is_cr_lf(c.cp[pos])) ++pos;
            ends.add(pos);
            continue;
        }
        size_t n_ws = 0, last_cr_lf_end = 0;
        while (space(pos + n_ws)) {
            if (is_cr_lf(c.cp[pos + n_ws])) last_cr_lf_end = pos + n_ws + 1;
            ++n_ws;
        }
        // \s*[\r\n]+ : the longest whitespace run that ends in CR or LF
        if (last_cr_lf_end > 0) {
            ends.add(pos = last_cr_lf_end);
            continue;
        }
        // \s+(?!\S) : before a non-space, all but the last whitespace character
        if (n_ws > 1 && pos + n_ws < e) {
            ends.add(pos += n_ws - 1);
            continue;
        }
        // \s+
        if (n_ws > 0) {
            ends.add(pos += n_ws);
            continue;
        }
        ends.add(++pos);  // unreachable with these classes; kept so the loop always advances
    }
}

// gpt-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void split_gpt2(const Cps& c, Range r, std::vector<Range>& out) {
    const size_t e = r.second;
    auto letter = [&](size_t p) { return p < e && c.cls[p].letter; };
    auto number = [&](size_t p) { return p < e && c.cls[p].number; };
    auto space = [&](size_t p) { return p < e && c.cls[p].space; };
    auto symbol = [&](size_t p) { return p < e && !space(p) && !letter(p) && !number(p); };

    Ends ends{out, r.first};
    size_t pos = r.first;
    while (pos < e) {
        // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive here)
        if (size_t n = contraction(c, pos, e, /*any_case=*/false)) {
            ends.add(pos += n);
            continue;
        }
        size_t q = c.cp[pos] == ' ' ? pos + 1 : pos;
        //  ?\p{L}+ |  ?\p{N}+ |  ?[^\s\p{L}\p{N}]+
        if (letter(q) || number(q) || symbol(q)) {
            pos = q;
            if (letter(q))
                while (letter(pos)) ++pos;
            else if (number(q))
                while (number(pos)) ++pos;
            else
                while (symbol(pos)) ++pos;
            ends.add(pos);
            continue;
        }
        size_t n_ws = 0;
        while (space(pos + n_ws)) ++n_ws;
        // \s+(?!\S)
        if (n_ws > 1 && pos + n_ws < e) {
            ends.add(pos += n_ws - 1);
            continue;
        }
        // \s+
        if (n_ws > 0) {
            ends.add(pos += n_ws);
            continue;
        }
        ends.add(++pos);
    }
}

// "Isolated" split on maximal runs where pred holds: runs and the gaps between them are pieces.
template <class Pred>
void isolate_runs(Range r, Pred pred, std::vector<Range>& out) {
    size_t pos = r.first;
    while (pos < r.second) {
        size_t start = pos;
        bool in = pred(pos);
        while (pos < r.second && pred(pos) == in) ++pos;
        out.emplace_back(start, pos);
    }
}

// llama.cpp's "default" BPE pre-tokenizer: four regexes, each refining the previous pieces.
//   1. [\p{P}\$\+<=>\^~\|]+   2. the gpt-2 pattern   3. \p{N}+   4. [0-9][0-9][0-9]
void split_llama_default(const Cps& c, Range all, std::vector<Range>& out) {
    std::vector<Range> a, b;
    isolate_runs(all, [&](size_t p) {
        uint32_t x = c.cp[p];
        return c.cls[p].punct || x == '$' || x == '+' || x == '<' || x == '=' || x == '>' ||
               x == '^' || x == '~' || x == '|';
    }, a);
    for (Range r : a) split_gpt2(c, r, b);
    a.clear();
    for (Range r : b) isolate_runs(r, [&](size_t p) { return c.cls[p].number; }, a);
    auto digit = [&](size_t p) { return c.cp[p] >= '0' && c.cp[p] <= '9'; };
    for (Range r : a) {
        Ends ends{out, r.first};
        size_t pos = r.first;
        while (pos < r.second) {
            if (pos + 3 <= r.second && digit(pos) && digit(pos + 1) && digit(pos + 2)) {
                ends.add(pos);  // the gap before the match
                ends.add(pos += 3);
            } else {
                ++pos;
            }
        }
        ends.add(r.second);
    }
}

}  // namespace

void pretokenize(PreTokenizer kind, std::string_view text, std::vector<std::string_view>& out) {
    if (text.empty()) return;
    if (kind == PreTokenizer::none) {
        out.push_back(text);
        return;
    }
    if (kind == PreTokenizer::gemma4) {
        // [^\n]+|[\n]+ (unicode_regex_split_custom_newlines); bytes suffice, '\n' is ASCII.
        size_t pos = 0;
        while (pos < text.size()) {
            size_t start = pos;
            bool nl = text[pos] == '\n';
            while (pos < text.size() && (text[pos] == '\n') == nl) ++pos;
            out.push_back(text.substr(start, pos - start));
        }
        return;
    }
    Cps c(text);
    std::vector<Range> pieces;
    pieces.reserve(c.cp.size() / 3 + 1);
    Range all{0, c.cp.size()};
    switch (kind) {
        case PreTokenizer::qwen2: split_qwen(c, all, false, 1, pieces); break;
        case PreTokenizer::qwen35: split_qwen(c, all, true, 1, pieces); break;
        case PreTokenizer::llama3: split_qwen(c, all, false, 3, pieces); break;
        case PreTokenizer::gpt2: split_gpt2(c, all, pieces); break;
        case PreTokenizer::llama_default: split_llama_default(c, all, pieces); break;
        case PreTokenizer::none:
        case PreTokenizer::gemma4: break;  // handled above
    }
    for (auto [b, e] : pieces) out.push_back(text.substr(c.off[b], c.off[e] - c.off[b]));
}

}  // namespace tdm
