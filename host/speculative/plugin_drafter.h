/* SPDX-License-Identifier: Apache-2.0 */
// host/speculative/plugin_drafter.h: a draftless drafter registered by a plugin
// (tdm_drafter_desc: CPU callbacks over the token history), as a Drafter. One that set
// tdm.drafter_branches' callback grows trees from its ranked continuations
// (speculative/branch_tree.h).
#pragma once

#include <map>

#include "plugin/handles.h"
#include "plugin/registry.h"
#include "speculative/drafter.h"

namespace tdm {

class PluginDrafter : public Drafter {
public:
    // options: the [speculative] settings as strings (ngram_size_n, ...).
    static Result<std::unique_ptr<PluginDrafter>> create(const DrafterEntry& entry,
                                                         const std::map<std::string, std::string>& options);
    ~PluginDrafter() override;
    const std::string& name() const override { return name_; }
    DrafterKind kind() const override { return DrafterKind::ngram; }
    Status begin(std::span<const int32_t> prompt) override;
    Result<std::vector<int32_t>> draft(const DraftRequest& req) override;
    bool grows_trees() const override { return propose_branches_ != nullptr; }
    Result<DraftTree> draft_tree(const DraftRequest& req) override;
    Status accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) override;
    Status finish() override;

private:
    PluginDrafter() = default;
    Error failed(const char* call, tdm_status st, const char* err, size_t err_size) const;
    const tdm_drafter_desc* desc_ = nullptr;
    bool checked_ = false;  // the plugin set begin2/propose2/accept2
    tdm_propose_branches_fn propose_branches_ = nullptr;
    void* obj_ = nullptr;
    std::string name_;
    tdm_options options_;
};

}  // namespace tdm
