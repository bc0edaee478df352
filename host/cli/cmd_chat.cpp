// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_chat.cpp: `tandem chat`: the conversation loop around a
// ChatSession: reading messages and commands, streaming replies, Ctrl-C, and
// the plain / JSON output used when standard input is not a terminal.
#include <unistd.h>

#include <cstdio>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/chat_commands.h"
#include "cli/chat_session.h"
#include "cli/commands.h"
#include "cli/line_reader.h"
#include "cli/memory_plan.h"
#include "cli/prompt.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/warmup_option.h"
#include "serve/generation_settings.h"
#include "serve/make_drafters.h"

namespace tdm::cli {
namespace {

void print_json(const nlohmann::json& j) {
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    std::fflush(stdout);
}

nlohmann::json turn_json(uint32_t turn, const TurnResult& t) {
    const GenerateStats& s = t.gen.stats;
    nlohmann::json j;
    j["turn"] = turn;
    j["n_prompt"] = s.n_prompt;
    j["prompt_tokens"] = t.prompt;
    j["n_cached"] = s.n_cached;
    j["n_prefilled"] = s.n_prefilled;
    j["tokens"] = t.gen.tokens;
    j["text"] = t.reply;
    j["stop_reason"] = to_string(t.gen.stop_reason);
    j["n_kv"] = t.gen.n_kv;
    j["timings"] = {{"prefill_ms", s.prefill_ms},
                    {"decode_ms", s.decode_ms},
                    {"prefill_tokens_per_s", s.prefill_tps()},
                    {"decode_tokens_per_s", s.decode_tps()}};
    if (t.spec) j["speculative"] = t.spec->json();
    return j;
}

std::string stats_text(const ChatSession& s) {
    const SessionTotals& t = s.totals();
    std::string out = fmt::format(
        "replies: {} | prompt tokens: {} ({} resumed from the KV cache, {} prefilled) | generated: {}\n"
        "context: {} of {} tokens in use | prefill {:.1f} ms | decode {:.1f} ms ({:.2f} tokens/s)\n",
        t.turns, t.prompt_tokens, t.cached_tokens, t.prefilled_tokens, t.generated_tokens,
        s.conversation().kv_tokens.size(), s.context_tokens(), t.prefill_ms, t.decode_ms,
        t.decode_ms > 0 ? double(t.generated_tokens) / (t.decode_ms / 1e3) : 0.0);
    if (t.spec)
        out += "speculative decoding:\n" + t.spec->report();
    else
        out += s.speculative() ? "speculative decoding: no reply yet\n" : "speculative decoding: off\n";
    return out;
}

nlohmann::json stats_json(const ChatSession& s, const std::optional<WarmupReport>& warmup) {
    const SessionTotals& t = s.totals();
    nlohmann::json j = {{"warmup_ms", warmup_ms(warmup)},
                        {"replies", t.turns},
                        {"prompt_tokens", t.prompt_tokens},
                        {"cached_tokens", t.cached_tokens},
                        {"generated_tokens", t.generated_tokens},
                        {"context_in_use", s.conversation().kv_tokens.size()},
                        {"context_tokens", s.context_tokens()},
                        {"prefill_ms", t.prefill_ms},
                        {"decode_ms", t.decode_ms}};
    if (t.spec) j["speculative"] = t.spec->json();
    return j;
}

// What a reply's end means for the user, beyond the reply itself ("" = nothing).
std::string stop_note(const TurnResult& t, uint32_t context) {
    if (t.gen.stop_reason == StopReason::cancelled)
        return fmt::format("[reply interrupted after {} tokens; it stays in the conversation]", t.gen.tokens.size());
    if (t.gen.stop_reason == StopReason::context)
        return fmt::format("[the context of {} tokens is full: /clear starts over (or raise -c/--ctx-size)]", context);
    return {};
}

}  // namespace

Status cmd_chat(App& app) {
    const ParsedArgs& a = app.args();
    const Config& cfg = app.config();
    const bool json = json_output(a);
    const bool terminal = isatty(STDIN_FILENO) && !json;

    TDM_TRY(check_memory_fits(app, cfg.model.path,
                              RunShape{.speculative = !speculation_off(cfg), .carried_head = true}));
    auto model = TDM_TRY(app.load_model(cfg.model.path));
    if (!model->tokenizer())
        return Error::format("chat needs the model's tokenizer, which is not usable: {}", model->tokenizer_error());
    ChatTemplate tmpl = TDM_TRY(chat_template_for(cfg, *model));
    const bool default_head = spec_types(cfg).empty() && !cfg.speculative.auto_select && !speculation_off(cfg) &&
                              TDM_TRY(draft_head_available(app, *model));
    const bool speculative = !spec_types(cfg).empty() || cfg.speculative.auto_select || default_head;
    auto kv = TDM_TRY(app.make_kv(*model, speculative));
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    Runner runner(*model, *kv, *dev, *pm);
    DrafterChain chain = TDM_TRY(make_drafters(app, *model, *kv, /*carried_head_by_default=*/true));
    // before the session takes its sequence: the warm-up's is freed again
    const std::optional<WarmupReport> warmup = TDM_TRY(warm_up_if_on(app, runner, chain.order, sampler_params(cfg)));

    ChatSession::Setup setup;
    setup.runner = &runner;
    setup.tokenizer = model->tokenizer();
    setup.drafters = chain.order;
    setup.generate.max_tokens = a.has("n-predict") ? int32_t(*a.get_int("n-predict")) : -1;
    setup.generate.sampling = sampler_params(cfg);
    setup.generate.n_batch = uint32_t(cfg.model.n_batch);
    setup.generate.ignore_eog = a.flag("ignore-eos");
    setup.spec = spec_params(cfg);
    setup.system_prompt = a.get_string("system-prompt");
    const std::string template_name = tmpl.name();
    ChatSession session = TDM_TRY(ChatSession::create(std::move(setup), std::move(tmpl)));

    if (!chain.empty()) {
        std::string names;
        for (Drafter* d : chain.order) names += (names.empty() ? "" : ", ") + d->name();
        std::fprintf(stderr, "speculative decoding: %s%s\n", names.c_str(),
                     default_head ? " (the model's draft head; --spec-type none turns it off)" : "");
    }
    if (!json) std::fprintf(stderr, "%s\n", warmup_line(warmup).c_str());
    if (terminal)
        std::fprintf(stderr,
                     "chat with %s (template %s, context %u tokens). /help lists the commands; Ctrl-C stops a "
                     "reply; Ctrl-D, /exit or Ctrl-C at the prompt ends.\n",
                     cfg.model.path.c_str(), template_name.c_str(), session.context_tokens());

    // Commands write here; the loop prints it (as text, or in the command's JSON object).
    std::string said;
    nlohmann::json said_json = nlohmann::json::object();
    ChatCommands commands;
    commands.add({{"/help"}, "", "list the commands", [&](std::string_view) -> Result<CommandOutcome> {
                      said = "commands:\n" + commands.help() +
                             "a line ending in \\ continues on the next; Ctrl-C stops a reply\n";
                      return CommandOutcome::keep_going;
                  }});
    commands.add({{"/clear"}, "", "forget the conversation and the KV cache (the system prompt stays)",
                  [&](std::string_view) -> Result<CommandOutcome> {
                      TDM_TRY(session.clear());
                      said = "conversation cleared\n";
                      return CommandOutcome::keep_going;
                  }});
    commands.add({{"/stats"}, "", "tokens, timings and speculative statistics of the session so far",
                  [&](std::string_view) -> Result<CommandOutcome> {
                      said = stats_text(session);
                      said_json = stats_json(session, warmup);
                      return CommandOutcome::keep_going;
                  }});
    commands.add({{"/save"}, "FILE", "save the conversation and its KV state (for /load, here or later)",
                  [&](std::string_view file) -> Result<CommandOutcome> {
                      const SavedStateInfo info = TDM_TRY(session.save(std::string(file)));
                      said = fmt::format("saved {} messages, {} tokens to {} ({}, KV {})\n",
                                         session.conversation().messages.size(),
                                         session.conversation().kv_tokens.size(), file, human_bytes(info.file_bytes),
                                         human_bytes(info.kv_bytes));
                      said_json = {{"file", std::string(file)}, {"file_bytes", info.file_bytes},
                                   {"tokens", session.conversation().kv_tokens.size()}};
                      return CommandOutcome::keep_going;
                  }});
    commands.add({{"/load"}, "FILE", "continue a conversation saved with /save (replaces this one)",
                  [&](std::string_view file) -> Result<CommandOutcome> {
                      TDM_TRY(session.load(std::string(file)));
                      said = fmt::format("loaded {} messages, {} tokens from {}\n",
                                         session.conversation().messages.size(),
                                         session.conversation().kv_tokens.size(), file);
                      said_json = {{"file", std::string(file)},
                                   {"messages", session.conversation().messages.size()},
                                   {"tokens", session.conversation().kv_tokens.size()}};
                      return CommandOutcome::keep_going;
                  }});
    commands.add({{"/exit", "/quit"}, "", "end the session",
                  [&](std::string_view) -> Result<CommandOutcome> { return CommandOutcome::exit; }});

    // Ctrl-C stops a reply (a second one before it stops ends the program) or,
    // at the prompt, the session.
    InterruptScope interrupt;
    auto reader = LineReader::create(terminal, terminal ? default_history_file() : "", interrupt.flag());
    uint32_t turn = 0;
    while (true) {
        interrupt.clear();
        const LineReader::Input in = reader->read("> ", ". ");
        if (in.status != LineReader::Status::line) break;  // end of input, or Ctrl-C at the prompt
        if (in.text.find_first_not_of(" \t\r\n") == std::string::npos) continue;

        if (ChatCommands::is_command(in.text)) {
            said.clear();
            said_json = nlohmann::json::object();
            const std::string name(ChatCommands::name_of(in.text));
            Result<CommandOutcome> r = commands.run(in.text);
            if (json) {
                nlohmann::json j = said_json;
                j["command"] = name;
                if (r.ok())
                    j["output"] = said;
                else
                    j["error"] = r.error().message();
                print_json(j);
            } else if (r.ok()) {
                std::fputs(said.c_str(), stdout);
                std::fflush(stdout);
            } else {
                std::fprintf(stderr, "%s\n", r.error().message().c_str());
            }
            if (r.ok() && *r == CommandOutcome::exit) break;
            continue;
        }

        ++turn;
        auto stream = [json](const std::string& piece) {
            if (json) return;
            std::fwrite(piece.data(), 1, piece.size(), stdout);
            std::fflush(stdout);
        };
        Result<TurnResult> r = session.turn(in.text, interrupt.flag(), stream, prefill_progress());
        if (!r.ok()) {
            if (json)
                print_json({{"turn", turn}, {"error", r.error().message()}});
            else
                std::fprintf(stderr, "error: %s\n", r.error().message().c_str());
            continue;
        }
        if (json) {
            print_json(turn_json(turn, *r));
        } else {
            std::fputs("\n", stdout);
            std::fflush(stdout);
        }
        if (const std::string note = stop_note(*r, session.context_tokens()); !note.empty())
            std::fprintf(stderr, "%s\n", note.c_str());
    }
    if (terminal) std::fputs("\n", stdout);
    return {};
}

}  // namespace tdm::cli
