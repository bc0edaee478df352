// SPDX-License-Identifier: Apache-2.0
// tests/tokenizer/tokenizer_fixtures.cpp: see tokenizer_fixtures.h.
#include "tokenizer_fixtures.h"

#include "support/fixtures.h"
#include "tokenizer/vocab_json.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <map>
#include <memory>
#include <sstream>

namespace tdm::test {

const std::vector<GoldenLine>& golden_lines(const std::string& name) {
    static std::map<std::string, std::vector<GoldenLine>> cache;
    auto it = cache.find(name);
    if (it != cache.end()) return it->second;
    std::vector<GoldenLine> lines;
    std::istringstream in(read_fixture("tokenizers/" + name + "/golden.jsonl"));
    std::string line;
    while (std::getline(in, line)) {
        if (line.empty()) continue;
        auto j = nlohmann::json::parse(line);
        lines.push_back({j["text"].get<std::string>(), j["ids"].get<std::vector<int32_t>>(),
                         j["decoded"].get<std::string>()});
    }
    return cache.emplace(name, std::move(lines)).first->second;
}

std::string tokenizer_json(const std::string& name) {
    return read_fixture("tokenizers/" + name + "/tokenizer.json.zst");
}

std::string tokenizer_config_json(const std::string& name) {
    return read_fixture("tokenizers/" + name + "/tokenizer_config.json.zst");
}

const Tokenizer& hf_tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
    auto it = cache.find(name);
    if (it != cache.end()) return *it->second;
    auto tok = load_tokenizer_hf(tokenizer_json(name), tokenizer_config_json(name), name + "/tokenizer.json");
    if (!tok.ok()) {
        ADD_FAILURE() << tok.error().message();
        std::abort();  // every caller needs the tokenizer; nothing useful can follow
    }
    return *cache.emplace(name, std::make_unique<Tokenizer>(std::move(tok).value())).first->second;
}

std::string escaped(const std::string& s) {
    std::string out;
    for (unsigned char c : s) {
        if (c == '\n') out += "\\n";
        else if (c == '\t') out += "\\t";
        else if (c == '\r') out += "\\r";
        else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else out += static_cast<char>(c);
    }
    return out;
}

}  // namespace tdm::test
