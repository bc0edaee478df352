// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_info.cpp: `tandem info FILE`: architecture, plugin, hparams,
// memory, tensor table, quantization mix, tokenizer. No device needed.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "plugin/abi_structs.h"
#include "model/weight_store.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/vocab_json.h"

namespace tdm::cli {
namespace {

std::string tokenizer_summary(const ModelSource& src, nlohmann::json* j) {
    Result<Tokenizer> tok = Error("no tokenizer");
    if (const GgufFile* g = src.gguf()) {
        if (g->find("tokenizer.ggml.model")) tok = load_tokenizer_gguf(*g);
        else tok = Error("no tokenizer.ggml.* keys");
    } else {
        std::filesystem::path dir = src.path();
        if (!std::filesystem::is_directory(dir)) dir = dir.parent_path();
        tok = load_tokenizer_hf_file((dir / "tokenizer.json").string());
    }
    if (!tok.ok()) {
        (*j)["error"] = tok.error().message();
        return "none (" + tok.error().message() + ")";
    }
    const Vocab& v = tok->vocab();
    const char* model = v.model == VocabModel::byte_bpe ? "byte-level BPE" : v.model == VocabModel::spm ? "SentencePiece" : "SentencePiece BPE";
    (*j)["model"] = model;
    (*j)["n_tokens"] = tok->n_vocab();
    (*j)["bos"] = tok->bos();
    (*j)["eos"] = tok->eos();
    (*j)["add_bos"] = v.add_bos;
    return fmt::format("{}, {} tokens, bos {}, eos {}{}", model, tok->n_vocab(), tok->bos(), tok->eos(),
                       v.add_bos ? ", adds BOS" : "");
}

}  // namespace

Status cmd_info(App& app) {
    const ParsedArgs& a = app.args();
    if (a.positionals().empty()) return Error("info: give a model FILE");
    const std::string path = a.positionals()[0];
    auto src = TDM_TRY(ModelSource::open(path));
    nlohmann::json j;
    j["path"] = path;
    j["format"] = std::string(source_format_name(src->format()));
    j["file_bytes"] = src->file_bytes();
    j["architecture"] = src->architecture();

    // plugin view (hyper-parameters, memory): optional, a file tandem cannot run is still described
    Registry* reg = TDM_TRY(app.registry());
    auto probe = probe_architecture(*src, *reg);
    // KV per token of the layers that keep every position; sliding-window layers keep a
    // ring of a fixed size per sequence instead (kv/kv_layout.h), sized as a run would
    uint64_t kv_per_token = 0, kv_rings = 0, kv_at_4096 = 0;
    uint32_t n_ring_layers = 0, ring_positions = 0;
    if (probe.ok()) {
        Config c = app.config();
        c.model.n_ctx = 4096;
        c.model.kv_type = "f16";
        KvPoolConfig kc = kv_config(c, probe->n_ctx_train, true);
        if (auto layout = plan_kv_layout(probe->attention_layers, {}, kc); layout.ok()) {
            kv_rings = layout->ring_bytes;
            kv_at_4096 = layout->linear_bytes + layout->ring_bytes;
            for (size_t i = 0; i < layout->ring_blocks.size(); ++i) {
                const auto& l = probe->attention_layers[i];
                if (layout->ring_blocks[i]) {
                    ++n_ring_layers;
                    ring_positions = std::max(ring_positions, layout->ring_blocks[i] * kc.block_size);
                } else {
                    kv_per_token += uint64_t(l.n_kv_head) * (l.head_dim_k + l.head_dim_v) * 2;
                }
            }
        }
    }
    if (probe.ok()) {
        j["plugin"] = probe->arch->plugin->name;
        j["plugin_architecture"] = probe->arch->desc->name;
        j["n_vocab"] = probe->n_vocab;
        j["n_embd"] = probe->n_embd;
        j["n_ctx_train"] = probe->n_ctx_train;
        j["attention_layers"] = probe->attention_layers.size();
        j["recurrent_states"] = probe->recurrent_states.size();
        j["kv_bytes_per_token_f16"] = kv_per_token;      // layers that keep every position
        j["kv_ring_layers"] = n_ring_layers;
        j["kv_ring_bytes_f16"] = kv_rings;              // their rings, per sequence (fixed)
        j["kv_bytes_at_4096_f16"] = kv_at_4096;
        j["hparams"] = probe->description;
    } else {
        j["plugin_error"] = probe.error().message();
    }
    // recurrent state: the checkpoints a verify pass needs (--draft-max + 2 per sequence)
    uint64_t state_floats = 0;
    if (probe.ok())
        for (const auto& r : probe->recurrent_states) state_floats += r.n_f32;
    const uint32_t checkpoints = uint32_t(std::max(2, app.config().speculative.draft_max + 2));
    if (state_floats) {
        j["recurrent_state_bytes_per_sequence"] = state_floats * 4;
        j["recurrent_state_checkpoints"] = checkpoints;
        j["recurrent_state_bytes_with_checkpoints"] = state_floats * 4 * checkpoints;
    }
    // draft heads the file carries (MTP/NextN): ask each head of this architecture
    std::vector<std::string> heads, head_notes;
    if (probe.ok()) {
        for (const DraftHeadEntry& h : reg->draft_heads()) {
            const auto& ta = h.target_archs;
            if (!ta.empty() && std::find(ta.begin(), ta.end(), probe->arch->desc->name) == ta.end()) continue;
            tdm_model_source handle;
            handle.src = src.get();
            tdm_draft_head_info info{};
            info.struct_size = sizeof info;
            void* obj = nullptr;
            char err[1024] = {0};
            if (h.desc->create(host_api(*h.plugin), &handle, nullptr, nullptr, &info, &obj, err, sizeof err) == TDM_OK && obj) {
                heads.push_back(fmt::format("{} (--spec-type {})", h.desc->name, h.spec_types[0]));
                h.desc->destroy(obj);
            } else {
                head_notes.push_back(fmt::format("{}: {}", h.desc->name, plugin_message(err, sizeof err, "refused")));
            }
        }
    }
    j["draft_heads"] = heads;

    std::map<std::string, std::pair<uint64_t, uint64_t>> mix;  // type -> (count, bytes)
    nlohmann::json tensors = nlohmann::json::array();
    for (const SourceTensor& t : src->tensors()) {
        auto& m = mix[t.dtype];
        m.first++;
        m.second += t.nbytes;
        tensors.push_back({{"name", t.name}, {"type", t.dtype}, {"ne", std::vector<int64_t>(t.ne, t.ne + std::max(1, t.n_dims))},
                           {"bytes", t.nbytes}});
    }
    nlohmann::json jmix = nlohmann::json::object();
    for (const auto& [k, v] : mix) jmix[k] = {{"tensors", v.first}, {"bytes", v.second}};
    j["types"] = jmix;
    j["n_tensors"] = src->tensors().size();
    nlohmann::json jt;
    const std::string tok = tokenizer_summary(*src, &jt);
    j["tokenizer"] = jt;

    if (json_output(a)) {
        j["tensors"] = tensors;
        std::printf("%s\n", j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
        return {};
    }
    std::printf("file:          %s (%s, %s)\n", path.c_str(), std::string(source_format_name(src->format())).c_str(),
                human_bytes(src->file_bytes()).c_str());
    std::printf("architecture:  %s\n", src->architecture().c_str());
    if (probe.ok()) {
        std::printf("plugin:        %s (architecture %s)\n", probe->arch->plugin->name.c_str(), probe->arch->desc->name);
        std::printf("hyper-parameters:\n");
        std::string d = probe->description;
        size_t s = 0;
        while (s < d.size()) {
            size_t e = d.find('\n', s);
            if (e == std::string::npos) e = d.size();
            std::printf("  %s\n", d.substr(s, e - s).c_str());
            s = e + 1;
        }
        if (n_ring_layers)
            std::printf("memory:        %zu attention layers, KV %s per token (f16) on %zu, and %s for the rings of %u "
                        "sliding-window layers (%u positions each, per sequence); %s at 4096 tokens\n",
                        probe->attention_layers.size(), human_bytes(kv_per_token).c_str(),
                        probe->attention_layers.size() - n_ring_layers, human_bytes(kv_rings).c_str(), n_ring_layers,
                        ring_positions, human_bytes(kv_at_4096).c_str());
        else
            std::printf("memory:        %zu attention layers, KV %s per token (f16), %s at 4096 tokens\n",
                        probe->attention_layers.size(), human_bytes(kv_per_token).c_str(),
                        human_bytes(kv_at_4096).c_str());
        if (state_floats)
            std::printf("               %zu recurrent states, %s per sequence; %u checkpoints (--draft-max %d + 2): %s\n",
                        probe->recurrent_states.size(), human_bytes(state_floats * 4).c_str(), checkpoints,
                        app.config().speculative.draft_max, human_bytes(state_floats * 4 * checkpoints).c_str());
        if (!heads.empty())
            std::printf("draft head:    %s\n", fmt::format("{}", fmt::join(heads, ", ")).c_str());
        for (const auto& n : head_notes) std::printf("draft head:    none (%s)\n", n.c_str());
    } else {
        std::printf("plugin:        none: %s\n", probe.error().message().c_str());
    }
    std::printf("tokenizer:     %s\n", tok.c_str());
    std::printf("tensor types: ");
    for (const auto& [k, v] : mix) std::printf(" %s x%llu (%s)", k.c_str(), (unsigned long long)v.first, human_bytes(v.second).c_str());
    std::printf("\ntensors (%zu):\n", src->tensors().size());
    const auto& ts = src->tensors();
    const bool all = a.flag("tensors") || ts.size() <= 16;
    for (size_t i = 0; i < ts.size(); ++i) {
        if (!all && i == 8) {
            std::printf("  ... %zu more (--tensors lists all)\n", ts.size() - 16);
            i = ts.size() - 8;
        }
        const SourceTensor& t = ts[i];
        std::printf("  %-48s %-6s %-22s %s\n", t.name.c_str(), t.dtype.c_str(),
                    shape_string(t.ne, uint32_t(std::max(1, t.n_dims))).c_str(), human_bytes(t.nbytes).c_str());
    }
    return {};
}

}  // namespace tdm::cli
