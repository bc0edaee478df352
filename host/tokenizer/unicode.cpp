// SPDX-License-Identifier: Apache-2.0
// host/tokenizer/unicode.cpp: UTF-8 decoding/repair, NFC via libutf8proc, character
// classes and the GPT-2 byte map. See unicode.h for what each function promises.
#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <array>
#include <cstdlib>

namespace tdm::unicode {

bool decode(std::string_view s, size_t& pos, uint32_t& cp) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
    uint8_t b0 = byte(pos);
    if (b0 < 0x80) {
        cp = b0;
        ++pos;
        return true;
    }
    int need;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (Unicode Table 3-7)
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        need = 1;
        cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        need = 2;
        cp = b0 & 0x0F;
        if (b0 == 0xE0) lo = 0xA0;  // no overlongs
        if (b0 == 0xED) hi = 0x9F;  // no surrogates
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        need = 3;
        cp = b0 & 0x07;
        if (b0 == 0xF0) lo = 0x90;  // no overlongs
        if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
    } else {
        ++pos;  // a continuation byte or C0, C1, F5..FF: never valid here
        return false;
    }
    size_t i = pos + 1;
    for (int k = 0; k < need; ++k, ++i) {
        if (i >= s.size()) {
            pos = i;
            return false;
        }
        uint8_t b = byte(i);
        uint8_t l = k == 0 ? lo : 0x80, h = k == 0 ? hi : 0xBF;
        if (b < l || b > h) {
            pos = i;  // the maximal subpart ends before the offending byte
            return false;
        }
        cp = (cp << 6) | (b & 0x3F);
    }
    pos = i;
    return true;
}

void append(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

bool is_valid(std::string_view s) {
    size_t pos = 0;
    uint32_t cp;
    while (pos < s.size()) {
        if (static_cast<uint8_t>(s[pos]) < 0x80) {  // ASCII fast path
            ++pos;
            continue;
        }
        if (!decode(s, pos, cp)) return false;
    }
    return true;
}

std::string replace_invalid_per_byte(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 8);
    size_t pos = 0;
    uint32_t cp;
    while (pos < s.size()) {
        size_t start = pos;
        if (decode(s, pos, cp)) {
            out.append(s.substr(start, pos - start));
        } else {
            append(out, kReplacement);
            pos = start + 1;
        }
    }
    return out;
}

std::string replace_invalid_lossy(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    size_t pos = 0;
    uint32_t cp;
    while (pos < s.size()) {
        size_t start = pos;
        if (decode(s, pos, cp))
            out.append(s.substr(start, pos - start));
        else
            append(out, kReplacement);
    }
    return out;
}

size_t complete_prefix_length(std::string_view s) {
    // Only the last three bytes can belong to a truncated character; a truncated
    // sequence is one whose decode failed exactly because the input ended.
    size_t from = s.size() > 3 ? s.size() - 3 : 0;
    for (size_t start = from; start < s.size(); ++start) {
        uint8_t b = static_cast<uint8_t>(s[start]);
        if (b < 0xC2 || b > 0xF4) continue;  // not a lead byte
        size_t pos = start;
        uint32_t cp;
        if (!decode(s, pos, cp) && pos == s.size()) return start;
    }
    return s.size();
}

std::string nfc(std::string_view s) {
    bool ascii = true;
    for (char c : s) ascii &= static_cast<uint8_t>(c) < 0x80;
    if (ascii) return std::string(s);  // ASCII is always NFC
    utf8proc_uint8_t* dst = nullptr;
    // An explicit length (no UTF8PROC_NULLTERM) keeps embedded NULs.
    utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                      static_cast<utf8proc_ssize_t>(s.size()), &dst,
                                      static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (n < 0) return std::string(s);  // only on invalid UTF-8, which callers repair first
    std::string out(reinterpret_cast<const char*>(dst), static_cast<size_t>(n));
    std::free(dst);
    return out;
}

bool is_white_space(uint32_t cp) {
    // unicode_set_whitespace in llama.cpp's unicode-data.cpp: the White_Space property.
    if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    if (cp < 0x85) return false;
    return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
           cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

CpClass classify(uint32_t cp) {
    CpClass c;
    c.space = is_white_space(cp);
    if (cp < 0x80) {  // ASCII fast path; same answers as the tables
        c.letter = (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
        c.number = cp >= '0' && cp <= '9';
        c.punct = (cp >= 0x21 && cp <= 0x2F && cp != '$' && cp != '+') ||
                  (cp >= 0x3A && cp <= 0x40 && cp != '<' && cp != '=' && cp != '>') ||
                  (cp >= 0x5B && cp <= 0x60 && cp != '^' && cp != '`') ||
                  cp == '{' || cp == '}';
        return c;
    }
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
        case UTF8PROC_CATEGORY_LU:
        case UTF8PROC_CATEGORY_LL:
        case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM:
        case UTF8PROC_CATEGORY_LO: c.letter = true; break;
        case UTF8PROC_CATEGORY_MN:
        case UTF8PROC_CATEGORY_MC:
        case UTF8PROC_CATEGORY_ME: c.mark = true; break;
        case UTF8PROC_CATEGORY_ND:
        case UTF8PROC_CATEGORY_NL:
        case UTF8PROC_CATEGORY_NO: c.number = true; break;
        case UTF8PROC_CATEGORY_PC:
        case UTF8PROC_CATEGORY_PD:
        case UTF8PROC_CATEGORY_PS:
        case UTF8PROC_CATEGORY_PE:
        case UTF8PROC_CATEGORY_PI:
        case UTF8PROC_CATEGORY_PF:
        case UTF8PROC_CATEGORY_PO: c.punct = true; break;
        default: break;
    }
    return c;
}

namespace {

struct ByteMap {
    std::array<uint32_t, 256> to_cp{};
    std::array<int16_t, 0x144> from_cp{};  // every image code point is below U+0144
    ByteMap() {
        from_cp.fill(-1);
        uint32_t next = 0x100;
        for (int b = 0; b < 256; ++b) {
            bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            to_cp[b] = printable ? static_cast<uint32_t>(b) : next++;
            from_cp[to_cp[b]] = static_cast<int16_t>(b);
        }
    }
};

const ByteMap& byte_map() {
    static const ByteMap m;
    return m;
}

}  // namespace

uint32_t byte_to_cp(uint8_t b) { return byte_map().to_cp[b]; }

int cp_to_byte(uint32_t cp) {
    return cp < byte_map().from_cp.size() ? byte_map().from_cp[cp] : -1;
}

}  // namespace tdm::unicode
