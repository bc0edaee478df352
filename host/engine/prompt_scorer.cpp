// SPDX-License-Identifier: Apache-2.0
// host/engine/prompt_scorer.cpp
#include "engine/prompt_scorer.h"

#include <algorithm>
#include <cstring>

namespace tdm {

namespace {

// Spare row buffers kept for later jobs: a session submits a few at a time (the engine
// waits for its backlog), so a few buffers serve every scored prompt.
constexpr size_t kSpareRowBuffers = 4;

}  // namespace

PromptScorer::PromptScorer() : worker_([this] { work(); }) {}

PromptScorer::~PromptScorer() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_worker_.notify_all();
    worker_.join();
}

void PromptScorer::submit(Key key, const float* rows, uint32_t n_vocab, std::span<const int32_t> tokens,
                          uint32_t first_pos, uint32_t n_top) {
    auto job = std::make_unique<Job>();
    job->key = key;
    job->tokens.assign(tokens.begin(), tokens.end());
    job->n_vocab = n_vocab;
    job->first_pos = first_pos;
    job->n_top = n_top;
    {
        std::lock_guard lock(mutex_);
        if (!spare_rows_.empty()) {
            job->rows = std::move(spare_rows_.back());
            spare_rows_.pop_back();
        }
    }
    job->rows.resize(tokens.size() * size_t(n_vocab));
    std::memcpy(job->rows.data(), rows, job->rows.size() * sizeof(float));
    {
        std::lock_guard lock(mutex_);
        queue_.push_back(std::move(job));
    }
    wake_worker_.notify_one();
}

void PromptScorer::take_done(const std::function<void(Key key, const Score& score)>& on) {
    std::deque<std::unique_ptr<Job>> done;
    {
        std::lock_guard lock(mutex_);
        done.swap(done_);
    }
    for (const auto& job : done)
        for (const Score& s : job->scores) on(job->key, s);
    std::lock_guard lock(mutex_);
    for (auto& job : done) recycle(std::move(job));
}

size_t PromptScorer::queued(Key key) const {
    std::lock_guard lock(mutex_);
    const auto mine = [&](const std::unique_ptr<Job>& j) { return j->key == key; };
    return size_t(std::count_if(queue_.begin(), queue_.end(), mine)) +
           size_t(std::count_if(done_.begin(), done_.end(), mine)) + (running_ && mine(running_) ? 1 : 0);
}

bool PromptScorer::idle() const {
    std::lock_guard lock(mutex_);
    return queue_.empty() && !running_ && done_.empty();
}

void PromptScorer::wait_for_one() {
    std::unique_lock lock(mutex_);
    finished_.wait(lock, [&] { return !done_.empty() || (queue_.empty() && !running_); });
}

void PromptScorer::forget(Key key) {
    std::lock_guard lock(mutex_);
    for (auto* jobs : {&queue_, &done_})
        for (auto it = jobs->begin(); it != jobs->end();) {
            if ((*it)->key != key) {
                ++it;
                continue;
            }
            recycle(std::move(*it));
            it = jobs->erase(it);
        }
    if (running_ && running_->key == key) running_->dropped = true;
    finished_.notify_all();
}

void PromptScorer::hold(bool held) {
    {
        std::lock_guard lock(mutex_);
        held_ = held;
    }
    wake_worker_.notify_all();
}

void PromptScorer::recycle(std::unique_ptr<Job> job) {
    if (spare_rows_.size() < kSpareRowBuffers) spare_rows_.push_back(std::move(job->rows));
}

void PromptScorer::work() {
    std::unique_lock lock(mutex_);
    while (true) {
        wake_worker_.wait(lock, [&] { return stop_ || (!held_ && !queue_.empty()); });
        if (stop_) return;
        running_ = std::move(queue_.front());
        queue_.pop_front();
        Job& job = *running_;
        lock.unlock();
        job.scores.resize(job.tokens.size());
        for (size_t i = 0; i < job.tokens.size(); ++i) {
            Score& s = job.scores[i];
            s.pos = job.first_pos + uint32_t(i);
            s.token = job.tokens[i];
            s.lp = token_logprobs(job.rows.data() + i * job.n_vocab, job.n_vocab, s.token, job.n_top);
        }
        lock.lock();
        if (running_->dropped)
            recycle(std::move(running_));
        else
            done_.push_back(std::move(running_));
        running_.reset();
        finished_.notify_all();
    }
}

}  // namespace tdm
