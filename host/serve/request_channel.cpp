// SPDX-License-Identifier: Apache-2.0
// host/serve/request_channel.cpp
#include "serve/request_channel.h"

#include <algorithm>
#include <chrono>

namespace tdm::server {

TokenLogprob response_logprob(const Tokenizer& tokenizer, int32_t id, const TokenLogprobs& lp) {
    TokenLogprob t;
    t.token = tokenizer.token_to_piece(id);
    t.logprob = lp.logprob;
    for (const auto& [alt, v] : lp.top) t.top.push_back({tokenizer.token_to_piece(alt), v});
    return t;
}

RequestChannel::RequestChannel(std::vector<std::string> stop, bool ignore_eog, const Tokenizer& tokenizer,
                               const EndOfTurnPieces& end_of_turn)
    : stops_(std::move(stop)), ignore_eog_(ignore_eog), tokenizer_(tokenizer), end_of_turn_(end_of_turn) {}

void RequestChannel::connect(const std::shared_ptr<RequestChannel>& channel, SessionRequest& session) {
    session.cancel = channel->cancel_;
    session.on_token = [channel](int32_t id, std::string_view piece, const TokenLogprobs* lp) {
        return channel->on_token(id, piece, lp);
    };
    session.on_done = [channel](const SessionResult& result) { channel->on_done(result); };
}

void RequestChannel::lead_with(std::string text, std::shared_ptr<const std::vector<TokenLogprob>> logprobs) {
    lead_ = std::move(text);
    lead_lp_ = std::move(logprobs);
}

void RequestChannel::deliver_lead() {
    if (!lead_) return;
    deliver(std::move(*lead_), lead_lp_ ? *lead_lp_ : std::vector<TokenLogprob>{});
    lead_.reset();
    lead_lp_.reset();
}

void RequestChannel::deliver(std::string text, std::vector<TokenLogprob> lp) {
    if (text.empty() && lp.empty()) return;
    std::lock_guard lock(mutex_);
    pieces_.emplace_back(std::move(text), std::move(lp));
    cv_.notify_all();
}

bool RequestChannel::on_token(int32_t id, std::string_view piece, const TokenLogprobs* lp) {
    if (stops_.stopped()) return false;
    deliver_lead();
    const std::string p(piece);
    const bool end_of_turn = id >= 0 && !ignore_eog_ && end_of_turn_.contains(tokenizer_.token_to_piece(id));
    if (lp && !end_of_turn) pending_lp_.push_back(response_logprob(tokenizer_, id, *lp));
    if (end_of_turn) return true;
    std::string shown = stops_.push(p);
    if (!shown.empty() || stops_.stopped()) {
        deliver(std::move(shown), std::move(pending_lp_));
        pending_lp_.clear();
    }
    return !stops_.stopped();
}

void RequestChannel::on_done(const SessionResult& result) {
    deliver_lead();
    if (!stops_.stopped()) deliver(stops_.flush(), std::move(pending_lp_));
    std::lock_guard lock(mutex_);
    result_ = result;
    cv_.notify_all();
}

RequestChannel::Ended RequestChannel::stream(const TextSink& on_text, bool want_logprobs, uint32_t time_limit_s,
                                             const std::function<bool()>& client_gone,
                                             const std::function<void()>& wake_engine) {
    using Clock = std::chrono::steady_clock;
    bool gone = false, timed_out = false;
    const auto deadline = Clock::now() + std::chrono::seconds(time_limit_s);
    const auto hang_up = [&] {
        gone = true;
        cancel_->store(true);
        wake_engine();
    };
    // past the limit: the engine ends the session at its next step, and what it made so far
    // is the answer
    const auto past_limit = [&] {
        if (!time_limit_s || timed_out || Clock::now() < deadline) return false;
        timed_out = true;
        cancel_->store(true);
        wake_engine();
        return true;
    };
    while (true) {
        Piece piece;
        {
            std::unique_lock lock(mutex_);
            const auto ready = [&] { return !pieces_.empty() || result_; };
            // waits in steps of 100 ms while the client must be watched (a prefill sends nothing)
            const bool watch = client_gone && !gone;
            const auto wake_at = std::min(time_limit_s && !timed_out ? deadline : Clock::time_point::max(),
                                          watch ? Clock::now() + std::chrono::milliseconds(100)
                                                : Clock::time_point::max());
            if (wake_at == Clock::time_point::max()) cv_.wait(lock, ready);
            else cv_.wait_until(lock, wake_at, ready);
            if (!ready()) {
                lock.unlock();
                if (!past_limit() && watch && client_gone()) hang_up();
                continue;
            }
            if (pieces_.empty()) break;
            piece = std::move(pieces_.front());
            pieces_.pop_front();
        }
        if (gone) continue;
        if (!on_text(piece.first, want_logprobs ? &piece.second : nullptr) || (client_gone && client_gone())) hang_up();
        // the time on_text took writing to a slow client counts too: with pieces queued
        // meanwhile, the wait above would not run out and look at the limit
        else past_limit();
    }
    // The engine thread is done with the channel: on_done came last.
    std::lock_guard lock(mutex_);
    Ended ended;
    ended.result = std::move(*result_);
    ended.stopped = stops_.stopped();
    ended.timed_out = timed_out;
    return ended;
}

}  // namespace tdm::server
