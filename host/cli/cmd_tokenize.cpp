// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_tokenize.cpp: `tandem tokenize`: ids and pieces of a text.
#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/vocab_json.h"

namespace tdm::cli {

Status cmd_tokenize(App& app) {
    const ParsedArgs& a = app.args();
    std::optional<Tokenizer> tok;
    if (auto t = a.get_string("tokenizer")) {
        tok = TDM_TRY(load_tokenizer_hf_file(*t));
    } else if (const std::string& m = app.config().model.path; !m.empty()) {  // -m or [model] path
        auto src = TDM_TRY(ModelSource::open(m));
        if (const GgufFile* g = src->gguf()) {
            tok = TDM_TRY(load_tokenizer_gguf(*g));
        } else {
            std::filesystem::path dir = m;
            if (!std::filesystem::is_directory(dir)) dir = dir.parent_path();
            tok = TDM_TRY(load_tokenizer_hf_file((dir / "tokenizer.json").string()));
        }
    } else {
        return Error("give -m MODEL (or [model] path in the config file) or --tokenizer tokenizer.json");
    }
    std::string text;
    for (size_t i = 0; i < a.positionals().size(); ++i) text += (i ? " " : "") + a.positionals()[i];
    const std::vector<int32_t> ids = tok->encode(text, a.flag("add-special"), !a.flag("no-parse-special"));
    if (json_output(a)) {
        nlohmann::json j;
        j["ids"] = ids;
        nlohmann::json pieces = nlohmann::json::array();
        for (int32_t id : ids) pieces.push_back(tok->token_to_piece(id));
        j["pieces"] = pieces;
        j["n_tokens"] = ids.size();
        std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    } else if (a.flag("ids")) {
        for (size_t i = 0; i < ids.size(); ++i) std::printf("%s%d", i ? "," : "", ids[i]);
        std::printf("\n");
    } else {
        for (int32_t id : ids) {
            std::string piece = tok->token_to_piece(id);
            std::string shown;
            for (unsigned char c : piece) {
                if (c == '\n') shown += "\\n";
                else if (c == '\t') shown += "\\t";
                else if (c == '\r') shown += "\\r";
                else if (c < 0x20) shown += fmt::format("\\x{:02x}", c);
                else shown += char(c);
            }
            std::printf("%8d -> '%s'\n", id, shown.c_str());
        }
        std::fprintf(stderr, "%zu tokens\n", ids.size());
    }
    return {};
}

}  // namespace tdm::cli
