// SPDX-License-Identifier: Apache-2.0
// host/speculative/plugin_drafter.cpp
#include "speculative/plugin_drafter.h"

#include <algorithm>

#include "plugin/abi_structs.h"
#include "speculative/branch_tree.h"

namespace tdm {

Result<std::unique_ptr<PluginDrafter>> PluginDrafter::create(const DrafterEntry& entry,
                                                             const std::map<std::string, std::string>& options) {
    std::unique_ptr<PluginDrafter> d(new PluginDrafter());
    d->desc_ = entry.desc;
    d->name_ = entry.desc->name;
    d->options_.values = options;
    // ABI 2 drafters report failures through the *2 calls; the host prefers them.
    d->checked_ = d->desc_->begin2 && d->desc_->propose2 && d->desc_->accept2;
    d->propose_branches_ = entry.propose_branches;
    char err[1024] = {0};
    if (d->desc_->create(host_api(*entry.plugin), &d->options_, &d->obj_, err, sizeof err) != TDM_OK)
        return Error::format("drafter {} (plugin {}): {}", d->name_, entry.plugin->name,
                             plugin_message(err, sizeof err, "create failed"));
    return d;
}

PluginDrafter::~PluginDrafter() {
    if (obj_) desc_->destroy(obj_);
}

Error PluginDrafter::failed(const char* call, tdm_status st, const char* err, size_t err_size) const {
    return Error::coded(st, "drafter {}: {} failed (status {}): {}", name_, call, int(st),
                        plugin_message(err, err_size, "(no message)"));
}

Status PluginDrafter::begin(std::span<const int32_t> prompt) {
    if (!checked_) {
        desc_->begin(obj_, prompt.data(), prompt.size());
        return {};
    }
    char err[1024] = {0};
    const tdm_status st = desc_->begin2(obj_, prompt.data(), prompt.size(), err, sizeof err);
    return st == TDM_OK ? Status{} : failed("begin", st, err, sizeof err);
}

Result<std::vector<int32_t>> PluginDrafter::draft(const DraftRequest& req) {
    std::vector<int32_t> out(req.max);
    uint64_t n = 0;
    if (!checked_) {
        n = desc_->propose(obj_, req.history.data(), req.history.size(), out.data(), req.max);
    } else {
        char err[1024] = {0};
        const tdm_status st =
            desc_->propose2(obj_, req.history.data(), req.history.size(), out.data(), req.max, &n, err, sizeof err);
        if (st != TDM_OK) return failed("propose", st, err, sizeof err);
    }
    if (n > req.max) return Error::format("drafter {} wrote {} tokens into room for {}", name_, n, req.max);
    out.resize(size_t(n));
    return out;
}

// Branches as long as the tree is deep, as many as it has drafts (each new branch adds one
// node at least, or none at all).
Result<DraftTree> PluginDrafter::draft_tree(const DraftRequest& req) {
    const uint32_t nodes = std::min(req.tree.nodes, kKvTreeMaxNodes);
    if (nodes < 2) return DraftTree(req.history.back());
    const uint32_t max_len = std::min(req.tree.steps ? req.tree.steps : req.max, nodes - 1);
    const uint32_t max_branches = nodes - 1;
    if (max_len == 0) return DraftTree(req.history.back());
    std::vector<int32_t> tokens(size_t(max_branches) * max_len);
    std::vector<uint32_t> lens(max_branches, 0);
    uint32_t n = 0;
    char err[1024] = {0};
    const tdm_status st = propose_branches_(obj_, req.history.data(), req.history.size(), max_branches, max_len,
                                            tokens.data(), lens.data(), &n, err, sizeof err);
    if (st != TDM_OK) return failed("propose_branches", st, err, sizeof err);
    if (n > max_branches) return Error::format("drafter {} wrote {} branches into room for {}", name_, n, max_branches);
    for (uint32_t b = 0; b < n; ++b)
        if (lens[b] > max_len)
            return Error::format("drafter {} wrote a branch of {} tokens into room for {}", name_, lens[b], max_len);
    lens.resize(n);
    return tree_of_branches(req.history.back(), tokens, max_len, lens, req.tree);
}

Status PluginDrafter::accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) {
    if (!checked_) {
        desc_->accept(obj_, history.data(), history.size(), n_drafted, n_accepted);
        return {};
    }
    char err[1024] = {0};
    const tdm_status st = desc_->accept2(obj_, history.data(), history.size(), n_drafted, n_accepted, err, sizeof err);
    return st == TDM_OK ? Status{} : failed("accept", st, err, sizeof err);
}

Status PluginDrafter::finish() {
    if (!desc_->save) return {};
    char err[1024] = {0};
    if (desc_->save(obj_, err, sizeof err) != TDM_OK)
        return Error::format("drafter {}: saving its state failed: {}", name_,
                             plugin_message(err, sizeof err, "(no message)"));
    return {};
}

}  // namespace tdm
