// SPDX-License-Identifier: Apache-2.0
// host/cli/chat_session.cpp
#include "cli/chat_session.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "engine/continuation.h"

namespace tdm::cli {

void accumulate(SpecStats& total, const SpecStats& turn) {
    if (total.drafters.size() < turn.drafters.size()) total.drafters.resize(turn.drafters.size());
    for (size_t i = 0; i < turn.drafters.size(); ++i) {
        DrafterStats& a = total.drafters[i];
        const DrafterStats& b = turn.drafters[i];
        a.name = b.name;
        a.calls_begin += b.calls_begin;
        a.calls_gen += b.calls_gen;
        a.calls_acc += b.calls_acc;
        a.gen_drafts += b.gen_drafts;
        a.acc_drafts += b.acc_drafts;
        a.gen_tokens += b.gen_tokens;
        a.acc_tokens += b.acc_tokens;
        a.dur_begin_ms += b.dur_begin_ms;
        a.dur_gen_ms += b.dur_gen_ms;
        a.dur_acc_ms += b.dur_acc_ms;
        if (!b.failure.empty()) a.failure = b.failure;  // the latest turn's reason
    }
    total.rounds += turn.rounds;
    total.plain_steps += turn.plain_steps;
    total.drafted += turn.drafted;
    total.accepted += turn.accepted;
    total.emitted += turn.emitted;
    if (total.drafted_at.size() < turn.drafted_at.size()) {
        total.drafted_at.resize(turn.drafted_at.size(), 0);
        total.accepted_at.resize(turn.drafted_at.size(), 0);
    }
    for (size_t i = 0; i < turn.drafted_at.size(); ++i) {
        total.drafted_at[i] += turn.drafted_at[i];
        total.accepted_at[i] += turn.accepted_at[i];
    }
    total.draft_ms += turn.draft_ms;
    total.verify_ms += turn.verify_ms;
    total.accept_ms += turn.accept_ms;
    total.plain_ms += turn.plain_ms;
    total.controller.add(turn.controller);
}

ChatSession::ChatSession(Setup setup, ChatTemplate chat_template)
    : setup_(std::move(setup)), template_(std::move(chat_template)) {}

Result<ChatSession> ChatSession::create(Setup setup, ChatTemplate chat_template) {
    if (!setup.runner) return Error("chat: no model");
    if (!setup.tokenizer) return Error("chat needs a model with a tokenizer");
    ChatSession s(std::move(setup), std::move(chat_template));
    // The generation prompt opens the assistant's turn; the part of it beyond the
    // assistant format's own header belongs to the turn's content when rendered
    // back (chatml-thinking: "<think>\n").
    const ChatTemplateParts& parts = s.template_.parts();
    const std::string& gp = parts.generation_prompt;
    if (auto it = parts.roles.find("assistant"); it != parts.roles.end()) {
        const std::string header = it->second.substr(0, it->second.find("{content}"));
        if (gp.compare(0, header.size(), header) == 0) s.assistant_opening_ = gp.substr(header.size());
    }
    s.end_of_turn_pieces_ = EndOfTurnPieces(*s.setup_.tokenizer);
    s.seq_ = TDM_TRY(s.setup_.runner->kv().add_sequence());
    if (s.setup_.system_prompt) s.conv_.messages.push_back({"system", *s.setup_.system_prompt});
    return s;
}

uint32_t ChatSession::context_tokens() const { return setup_.runner->kv().capacity_tokens(); }

Result<std::vector<int32_t>> ChatSession::render(const std::vector<ChatMessage>& messages) const {
    const std::string text = TDM_TRY(template_.apply(messages, true));
    // as `tandem run -p TEXT` tokenizes its prompt
    std::vector<int32_t> ids = setup_.tokenizer->encode(text, true);
    if (ids.empty()) return Error("the conversation is empty after tokenization");
    return ids;
}

std::string ChatSession::reply_content(const GenerateResult& gen) const {
    std::span<const int32_t> ids = gen.tokens;
    if (!ids.empty() && (gen.stop_reason == StopReason::eog || gen.stop_reason == StopReason::stop_token)) ids = ids.first(ids.size() - 1);
    return setup_.tokenizer->decode(ids);
}

Result<TurnResult> ChatSession::turn(const std::string& user_text, const std::atomic<bool>* cancel,
                                     const std::function<void(const std::string&)>& on_text,
                                     ProgressHook on_progress) {
    std::vector<ChatMessage> messages = conv_.messages;
    messages.push_back({"user", user_text});
    TurnResult t;
    t.prompt = TDM_TRY(render(messages));
    if (t.prompt.size() >= context_tokens())
        return Error::format("the conversation with this message is {} tokens, and the context holds {}: /clear "
                             "starts over (or raise -c/--ctx-size)",
                             t.prompt.size(), context_tokens());

    KvPool& kv = setup_.runner->kv();
    const uint32_t n_cached = resumable_prefix(kv, seq_, conv_.kv_tokens, t.prompt, setup_.drafters);
    // Until generation returns, no later turn may rely on the KV: a generation that
    // fails empties it (BatchEngine::finish), and the next turn rebuilds it from nothing.
    conv_.kv_tokens.clear();
    TDM_TRY(kv.truncate(seq_, n_cached));
    GenerateParams gp = setup_.generate;
    gp.n_cached = n_cached;
    gp.cancel = cancel;
    gp.on_progress = std::move(on_progress);
    // The end-of-turn token closes the reply; the template writes it, the user does not read it.
    auto shown = [&](const std::string& piece) {
        if (!on_text) return;
        if (!gp.ignore_eog && end_of_turn_pieces_.contains(piece)) return;
        on_text(piece);
    };
    if (setup_.drafters.empty()) {
        t.gen = TDM_TRY(generate(*setup_.runner, setup_.tokenizer, seq_, t.prompt, gp, shown));
    } else {
        SpecResult sr = TDM_TRY(generate_speculative(*setup_.runner, setup_.tokenizer, seq_, t.prompt, gp,
                                                     setup_.drafters, setup_.spec, shown));
        t.gen = std::move(sr.gen);
        t.spec = std::move(sr.stats);
    }

    std::vector<int32_t> all = t.prompt;
    all.insert(all.end(), t.gen.tokens.begin(), t.gen.tokens.end());
    all.resize(std::min<size_t>(all.size(), t.gen.n_kv));
    conv_.kv_tokens = std::move(all);

    t.reply = reply_content(t.gen);
    if (!t.gen.tokens.empty()) {
        conv_.messages = std::move(messages);
        conv_.messages.push_back({"assistant", assistant_opening_ + t.reply});
    }

    totals_.turns++;
    totals_.prompt_tokens += t.gen.stats.n_prompt;
    totals_.cached_tokens += t.gen.stats.n_cached;
    totals_.prefilled_tokens += t.gen.stats.n_prefilled;
    totals_.generated_tokens += t.gen.stats.n_generated;
    totals_.prefill_ms += t.gen.stats.prefill_ms;
    totals_.decode_ms += t.gen.stats.decode_ms;
    if (t.spec) {
        if (!totals_.spec) totals_.spec.emplace();
        accumulate(*totals_.spec, *t.spec);
    }
    return t;
}

Status ChatSession::clear() {
    conv_.messages.clear();
    conv_.kv_tokens.clear();
    if (setup_.system_prompt) conv_.messages.push_back({"system", *setup_.system_prompt});
    return setup_.runner->kv().truncate(seq_, 0);
}

Result<SavedStateInfo> ChatSession::save(const std::string& path) {
    nlohmann::json j;
    j["format"] = "tandem-chat";
    j["version"] = 1;
    j["template"] = template_.name();
    j["messages"] = nlohmann::json::array();
    for (const ChatMessage& m : conv_.messages) j["messages"].push_back({{"role", m.role}, {"content", m.content}});
    KvPool& kv = setup_.runner->kv();
    return save_sequence_state(path, setup_.runner->model(), kv, seq_, conv_.kv_tokens, setup_.drafters, j.dump());
}

Result<std::vector<ChatMessage>> ChatSession::saved_conversation(const std::string& extra) const {
    const auto j = nlohmann::json::parse(extra, nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("format", "") != "tandem-chat" || !j.contains("messages") ||
        !j["messages"].is_array())
        return Error("it holds a KV state but no chat conversation (a prompt cache of `tandem run`?)");
    const nlohmann::json& saved = j["messages"];
    // every message renders to a token at least: more than the context holds cannot fit
    if (saved.size() >= context_tokens())
        return Error::format("it holds {} messages, more than a context of {} tokens holds", saved.size(),
                             context_tokens());
    const auto& roles = template_.parts().roles;
    std::vector<ChatMessage> messages;
    for (size_t i = 0; i < saved.size(); ++i) {
        const nlohmann::json& m = saved[i];
        if (!m.is_object() || !m.contains("role") || !m.contains("content") || !m["role"].is_string() ||
            !m["content"].is_string())
            return Error::format("its message {} is not {{\"role\", \"content\"}}", i + 1);
        std::string role = m["role"].get<std::string>();
        // a template without a system turn (Gemma) folds a leading system message into the
        // first user turn, as the session itself does with --system
        const bool folded_system = i == 0 && role == "system" && template_.parts().fold_system_into_first_turn;
        if (!roles.contains(role) && !folded_system) {
            std::string known;
            for (const auto& [name, format] : roles) known += (known.empty() ? "" : ", ") + name;
            if (role.size() > 40) role = role.substr(0, 40) + "...";
            return Error::format("its message {} has the role '{}', which the {} template does not have ({})", i + 1,
                                 role, template_.name(), known);
        }
        messages.push_back({std::move(role), m["content"].get<std::string>()});
    }
    const std::vector<int32_t> rendered = TDM_TRY(render(messages));
    if (rendered.size() >= context_tokens())
        return Error::format("its conversation is {} tokens, and the context holds {} (raise -c/--ctx-size)",
                             rendered.size(), context_tokens());
    return messages;
}

Status ChatSession::load(const std::string& path) {
    KvPool& kv = setup_.runner->kv();
    auto loaded = load_sequence_state(path, setup_.runner->model(), kv, seq_, setup_.drafters);
    if (!loaded.ok()) {
        // a file found corrupt while its KV was read leaves the sequence empty: the
        // conversation stays, and its next turn computes its KV again
        if (kv.reserved_tokens(seq_) == 0 && !conv_.kv_tokens.empty()) {
            conv_.kv_tokens.clear();
            return Error::format("{} (the conversation is kept; its next turn recomputes the KV)",
                                 loaded.error().message());
        }
        return loaded.take_error();
    }
    LoadedState st = std::move(loaded).value();
    auto messages = saved_conversation(st.extra);
    if (!messages.ok()) {
        // the file's KV has replaced the conversation's: forget it, keep the messages
        conv_.kv_tokens.clear();
        TDM_TRY(kv.truncate(seq_, 0));
        return Error::format("{}: {}; not loaded (the conversation is kept; its next turn recomputes the KV)", path,
                             messages.error().message());
    }
    conv_.messages = std::move(messages).value();
    conv_.kv_tokens = std::move(st.tokens);
    return {};
}

}  // namespace tdm::cli
