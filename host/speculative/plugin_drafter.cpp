// host/speculative/plugin_drafter.cpp
#include "speculative/plugin_drafter.h"

namespace tdm {

Result<std::unique_ptr<PluginDrafter>> PluginDrafter::create(const DrafterEntry& entry,
                                                             const std::map<std::string, std::string>& options) {
    std::unique_ptr<PluginDrafter> d(new PluginDrafter());
    d->desc_ = entry.desc;
    d->name_ = entry.desc->name;
    d->options_.values = options;
    char err[1024] = {0};
    if (d->desc_->create(host_api(), &d->options_, &d->obj_, err, sizeof err) != TDM_OK)
        return Error::format("drafter {} (plugin {}): {}", d->name_, entry.plugin->name, err[0] ? err : "create failed");
    return d;
}

PluginDrafter::~PluginDrafter() {
    if (obj_) desc_->destroy(obj_);
}

Status PluginDrafter::begin(std::span<const int32_t> prompt) {
    desc_->begin(obj_, prompt.data(), prompt.size());
    return {};
}

Result<std::vector<int32_t>> PluginDrafter::draft(const DraftRequest& req) {
    std::vector<int32_t> out(req.max);
    const uint64_t n = desc_->propose(obj_, req.history.data(), req.history.size(), out.data(), req.max);
    if (n > req.max) return Error::format("drafter {} wrote {} tokens into room for {}", name_, n, req.max);
    out.resize(size_t(n));
    return out;
}

Status PluginDrafter::accept(std::span<const int32_t> history, uint32_t n_drafted, uint32_t n_accepted) {
    desc_->accept(obj_, history.data(), history.size(), n_drafted, n_accepted);
    return {};
}

Status PluginDrafter::finish() {
    if (!desc_->save) return {};
    char err[1024] = {0};
    if (desc_->save(obj_, err, sizeof err) != TDM_OK)
        return Error::format("drafter {}: saving its state failed: {}", name_, err[0] ? err : "(no message)");
    return {};
}

}  // namespace tdm
