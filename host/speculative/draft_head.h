/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/draft_head.h: a plugin's draft head (an MTP/NextN head, an
// assistant model) as a Drafter.
//
// The head reads the target's hidden states: the scheduler hands it the
// target's hidden row of every committed position (observe()). The head's own
// KV holds one entry per committed pair (h_i, x_{i+1}), at head position i
// (the target position of the hidden; the head only sees relative positions).
// A draft is ONE graph: a catch-up over the committed pairs the head has not
// seen yet, then k-1 chained steps (hidden <- the head's own output, token <-
// its own argmax, both on the device); only the k token ids come back. When the
// catch-up's target rows are those of the last verify, the graph reads them
// where the verify left them on the device (TargetRows::hidden_on_device), by
// row index; rows of a prefill are copied in from the host. After
// verification the entries the chain wrote are dropped (they were computed from
// draft hiddens, not the target's); the next catch-up writes the committed ones.
// A stateless, constant-position head (Gemma 4's assistant) has no KV: a round
// is one row (x_p and the target hidden of p - 1) and k steps, all at position
// p, attending only the target's committed KV (< p), read-only.
#pragma once

#include <map>
#include <memory>
#include <tuple>

#include "engine/runner.h"
#include "speculative/drafter.h"

namespace tdm {

struct DraftHeadOptions {
    std::map<std::string, std::string> options;  // tdm_options for the plugin
    KvPoolConfig kv;                              // the head's own KV layers
    uint32_t catch_up_chunk = 64;                 // rows per pass when catching up a long prompt
    bool check_weights = true;  // refuse NaN/Inf head weights, as the target's (model/weight_check.h)
    // The NaN debugging mode (TANDEM_CHECK_NAN=1, engine/logits_check.h): every op of the
    // draft graphs is probed, and a draft that produced a NaN or infinity is an error naming
    // the first op and layer that did (the scheduler then turns the head off: the output
    // stays exact). Without it a broken head only drafts tokens that are never accepted.
    bool nan_debug = false;
    // Read the target's rows where a verify left them on the device (TargetRows::
    // hidden_on_device); false: always from host copies (tests compare the two).
    bool rows_on_device = true;
};

class DraftHeadDrafter : public Drafter {
public:
    // `source` holds the head's weights: the target's own file (shared, mapped
    // once) or a side file. Errors from the plugin (e.g. no MTP layer in the
    // file) come back as they are.
    static Result<std::unique_ptr<DraftHeadDrafter>> create(const DraftHeadEntry& entry, std::string spec_type,
                                                            std::shared_ptr<const ModelSource> source,
                                                            const Model& target, const KvPool& target_kv,
                                                            vk::Device& device, vk::PipelineManager& pipelines,
                                                            const DraftHeadOptions& opt);
    ~DraftHeadDrafter() override;

    const std::string& name() const override { return name_; }
    tdm_hidden_point hidden_point() const override { return info_.hidden; }
    Status begin(std::span<const int32_t> prompt) override;
    // Resumes where the target's KV resumes, if the head still holds the
    // target's hidden row of every position it has not paired yet.
    bool can_resume(uint32_t n_cached) const override;
    Status resume(std::span<const int32_t> prompt, uint32_t n_cached) override;
    // Its KV pairs and the hidden rows not yet paired (draft_head_state.cpp).
    bool needs_saved_state() const override { return !stateless(); }
    Result<std::string> save_state(uint32_t n_tokens) override;
    Status load_state(std::span<const int32_t> tokens, std::string_view bytes) override;
    Status observe(const TargetRows& rows) override;
    Status prepare(const DraftRequest& req) override;
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override;
    Status accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) override;
    void cancel() override;

    uint64_t weight_bytes() const { return weights_ ? weights_->device_bytes() : 0; }
    // Target hidden rows the draft graphs have read, from the device (a verify's
    // rows, in place) and from host copies (prefill rows).
    uint64_t rows_read_on_device() const { return rows_on_device_; }
    uint64_t rows_read_from_host() const { return rows_from_host_; }
    uint64_t kv_bytes() const { return kv_ ? kv_->device_bytes() : 0; }
    // TDM_DRAFT_HEAD_STATELESS: no KV of its own (kv_ is null), one-row rounds
    bool stateless() const { return (info_.flags & TDM_DRAFT_HEAD_STATELESS) != 0; }

private:
    struct Chain;  // a compiled catch-up + k-step graph
    DraftHeadDrafter() = default;
    // `device_rows`: the catch-up reads its target rows from this table by index
    // (null: from a host input)
    Result<Chain*> chain(uint32_t n_catch, uint32_t k, const DeviceWeight* device_rows);
    // chain(), reading the rows on the device when asked and possible, else from host copies
    Result<Chain*> chain_for(uint32_t n_catch, uint32_t k, bool on_device);
    // Fills the catch-up's target rows for positions [first, first + n).
    void set_catch_up_rows(Chain& c, uint32_t first, uint32_t n);
    Status submit(const DraftRequest& req);
    Status submit_stateless(const DraftRequest& req);
    Status check_finite(const Chain& c) const;  // nan_debug: what the probes of c's last run caught
    bool holds_row(uint32_t pos) const;  // the target hidden row of `pos` is held

    std::string name_;
    const DraftHeadEntry* entry_ = nullptr;
    std::shared_ptr<const ModelSource> source_;
    tdm_model_source src_handle_;
    tdm_options options_;
    tdm_draft_head_info info_{};
    std::vector<tdm_attention_layer> own_layers_;  // info_.own_layers points here (host copies)
    void* head_ = nullptr;
    std::unique_ptr<WeightStore> weights_;
    std::unique_ptr<KvPool> kv_;
    const KvPool* target_kv_ = nullptr;
    uint32_t n_embd_target_ = 0, n_vocab_ = 0;
    vk::Device* device_ = nullptr;
    vk::PipelineManager* pipelines_ = nullptr;
    DraftHeadOptions opt_;
    std::map<std::tuple<uint32_t, uint32_t, const DeviceWeight*>, std::unique_ptr<Chain>> chains_;

    int seq_ = -1;
    uint32_t n_past_ = 0;                  // head positions [0, n_past_) hold committed pairs
    uint32_t hidden_first_ = 0;            // target position of hidden_[0]
    std::vector<float> hidden_;            // committed target hidden rows not yet paired
    // the last observed rows on the device: positions [device_first_, + device_n_)
    // are rows [0, device_n_) of device_rows_, until the target's next pass
    const DeviceWeight* device_rows_ = nullptr;
    uint32_t device_first_ = 0, device_n_ = 0;
    const DeviceWeight* device_table_ = nullptr;  // the table the cached device chains read
    uint64_t rows_on_device_ = 0, rows_from_host_ = 0;
    Chain* pending_ = nullptr;             // submitted by prepare()
    uint32_t pending_pos_ = 0, pending_k_ = 0;
};

}  // namespace tdm
