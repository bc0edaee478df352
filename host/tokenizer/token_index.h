/* SPDX-License-Identifier: Apache-2.0 */
// host/tokenizer/token_index.h: token text -> id lookup with string_view keys.
// Not here: added-token matching inside text (special_tokens.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tdm {

class TokenIndex {
public:
    // Later ids win on duplicate texts, as in llama.cpp's token_to_id.
    void build(const std::vector<std::string>& tokens) {
        map_.clear();
        map_.reserve(tokens.size());
        for (size_t i = 0; i < tokens.size(); ++i) map_[tokens[i]] = static_cast<int32_t>(i);
    }
    // -1 if no token has this text.
    int32_t find(std::string_view text) const {
        auto it = map_.find(text);
        return it == map_.end() ? -1 : it->second;
    }

private:
    struct Hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
    };
    struct Eq {
        using is_transparent = void;
        bool operator()(std::string_view a, std::string_view b) const { return a == b; }
    };
    std::unordered_map<std::string, int32_t, Hash, Eq> map_;
};

}  // namespace tdm
