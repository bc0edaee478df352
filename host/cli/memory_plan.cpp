// SPDX-License-Identifier: Apache-2.0
// host/cli/memory_plan.cpp
#include "cli/memory_plan.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "cli/commands.h"
#include "serve/generation_settings.h"
#include "plugin/abi_structs.h"
#include "vk/memory.h"

namespace tdm::cli {
namespace {

std::string file_name(const std::string& path) {
    const std::string name = std::filesystem::path(path).filename().string();
    return name.empty() ? path : name;
}

// What the weight store allocates for a file's tensors, the arena's policy replayed in file
// order (vk::Arena::allocate): blocks of the file's size plus 1 MiB, 1 to 256 MiB
// (Model::load), each allocated whole; the first tensor opens one (of its own size if larger),
// and a tensor that does not fit the open block and is a quarter block or more gets a buffer
// of its own.
uint64_t weight_bytes(const ModelSource& src) {
    const uint64_t block = std::clamp<uint64_t>(src.file_bytes() + (1u << 20), 1u << 20, 256ull << 20);
    uint64_t total = 0, left = 0;
    bool open = false;
    for (const SourceTensor& t : src.tensors()) {
        const uint64_t n = (t.nbytes + 255) / 256 * 256;  // binding alignment
        if (open && n <= left) {
            left -= n;
        } else if (open && n >= block / 4) {
            total += n;
        } else {
            total += std::max(n, block);
            left = std::max(n, block) - n;
            open = true;
        }
    }
    return total;
}

// The weights, KV cache and recurrent states of one model, as make_kv would size them.
void add_model(MemoryPlan* plan, const Config& config, const ModelSource& src, const ArchProbe& probe,
               bool speculative, uint32_t sequences, uint64_t max_binding) {
    const std::string name = file_name(src.path());
    const uint64_t weights = weight_bytes(src);
    plan->items.push_back({"weights of " + name, [weights](uint32_t) { return weights; }});
    const uint32_t n_ctx_train = probe.n_ctx_train;
    auto layers = probe.attention_layers;
    auto states = probe.recurrent_states;
    plan->items.push_back({"KV cache of " + name, [=, &config](uint32_t n_ctx) {
                               Config c = config;
                               c.model.n_ctx = int(n_ctx);
                               KvPoolConfig kc = kv_config(c, n_ctx_train, speculative, sequences);
                               fit_checkpoints(kc, states, speculative, max_binding);
                               return kv_pool_bytes(layers, states, kc);
                           }});
}

// A draft head's own attention layers (MTP / NextN): their KV cache is sized like the
// target's; their weights are in the target's file unless --mtp-head names another.
// Whether the head could be made from the file (its plugin's create accepted it): a head
// it refuses adds nothing, and make_drafters reports why (or, in auto mode, skips it).
// `head_file`: a file that holds the head alone (-md of a Gemma 4 assistant), else
// --mtp-head's file or the target's.
Result<bool> add_draft_head(MemoryPlan* plan, const Config& config, const DraftHeadEntry& head,
                            const ModelSource& target, uint32_t target_n_ctx_train, uint32_t sequences,
                            std::unique_ptr<ModelSource> head_file = nullptr) {
    std::unique_ptr<ModelSource> side = std::move(head_file);
    const bool own_file = side != nullptr;
    if (own_file) {
        // given explicitly: its weights load whatever create says without a target here
        const uint64_t weights = weight_bytes(*side);
        plan->items.push_back({"weights of " + file_name(side->path()), [weights](uint32_t) { return weights; }});
    }
    if (!side && !config.model.mtp_head_path.empty()) {
        auto opened = ModelSource::open(config.model.mtp_head_path);
        if (!opened.ok()) return false;  // make_drafters reports it
        side = std::move(opened).value();
    }
    tdm_model_source handle;
    handle.src = side ? side.get() : &target;
    tdm_draft_head_info info{};
    info.struct_size = sizeof info;
    void* obj = nullptr;
    char err[1024] = {0};
    if (head.desc->create(host_api(*head.plugin), &handle, nullptr, nullptr, &info, &obj, err, sizeof err) !=
            TDM_OK ||
        !obj)
        return false;
    auto layers = read_abi_array(info.own_layers, info.n_own_layers, head.plugin->abi,
                                 fmt::format("draft head {}: own layers", head.desc->name));
    head.desc->destroy(obj);
    if (!layers.ok()) return false;
    if (side && !own_file) {
        const uint64_t weights = weight_bytes(*side);
        plan->items.push_back({"weights of " + file_name(side->path()), [weights](uint32_t) { return weights; }});
    }
    if (layers->empty()) return true;
    std::vector<tdm_attention_layer> own = std::move(layers).value();
    plan->items.push_back({fmt::format("KV cache of the {} draft head", head.desc->name), [=, &config](uint32_t n_ctx) {
                               KvPoolConfig kc;
                               kc.n_ctx = n_ctx > 0 ? n_ctx : target_n_ctx_train;
                               kc.f16 = config.model.kv_type != "f32";
                               kc.n_seq_max = sequences;
                               kc.rows_max = ring_rows_max(uint32_t(config.model.n_batch),
                                                           uint32_t(config.speculative.draft_max + 1));
                               return kv_pool_bytes(own, {}, kc);
                           }});
    return true;
}

}  // namespace

uint64_t MemoryPlan::total_at(uint32_t c) const {
    uint64_t total = 0;
    for (const MemoryItem& i : items) total += i.bytes_at(c);
    return total;
}

uint64_t kv_pool_bytes(std::span<const tdm_attention_layer> layers, std::span<const tdm_recurrent_state> states,
                       const KvPoolConfig& config) {
    const auto layout = plan_kv_layout(layers, states, config);
    return layout.ok() ? layout->total_bytes() : 0;  // KvPool::create reports the error
}

MemoryBudget device_memory_budget(const vk::Device& device) {
    MemoryBudget b;
    const uint64_t used = device.allocated_bytes();
    auto consider = [&](uint64_t bytes, std::string source) {
        const uint64_t left = bytes > used ? bytes - used : 0;
        if (bytes && (!b.bytes || left < b.bytes)) {
            b.bytes = std::max<uint64_t>(left, 1);
            b.source = std::move(source);
        }
    };
    const vk::DeviceCaps& caps = device.caps();
    if (device.memory_limit())
        consider(device.memory_limit(), fmt::format("the memory limit of {} (--memory-limit or [device] memory_limit)",
                                                    vk::format_bytes(device.memory_limit())));
    if (caps.is_cpu()) {
        const uint64_t avail = vk::host_memory_available();
        // the CPU device's memory is host memory, taken as it is touched: what counts is
        // what the host has left
        if (avail) consider(avail + used, fmt::format("the {} of host memory available to the CPU device {}",
                                                      vk::format_bytes(avail), caps.name));
    } else {
        uint64_t heap = 0;
        for (const vk::MemoryHeapInfo& h : caps.heaps)
            if (h.device_local) heap = std::max(heap, h.size);
        if (heap) consider(heap, fmt::format("the {} device-local memory of {}", vk::format_bytes(heap), caps.name));
    }
    return b;
}

Status check_memory_plan(const MemoryPlan& plan, const MemoryBudget& budget) {
    if (!budget.bytes) return {};
    const uint64_t total = plan.total_at(plan.n_ctx);
    if (total <= budget.bytes) return {};
    std::string parts;
    for (const MemoryItem& i : plan.items)
        if (const uint64_t b = i.bytes_at(plan.n_ctx))
            parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", i.what, vk::format_bytes(b));
    std::string msg = fmt::format("not enough device memory: this run needs about {} ({}), more than {}",
                                  vk::format_bytes(total), parts, budget.source);
    if (plan.kv_by_memory)
        return Error(msg + "; lower --kv-memory ([model] kv_memory)");
    // the largest -c (a whole number of KV blocks) whose total fits
    constexpr uint64_t kBlock = kMinContextTokens;
    if (plan.total_at(uint32_t(kBlock)) > budget.bytes)
        return Error(msg + fmt::format("; even the shortest context (-c {}) needs {}", kBlock,
                                       vk::format_bytes(plan.total_at(uint32_t(kBlock)))));
    uint64_t lo = 1, hi = uint64_t(std::numeric_limits<int32_t>::max()) / kBlock;  // in blocks
    while (lo < hi) {
        const uint64_t mid = lo + (hi - lo + 1) / 2;
        if (plan.total_at(uint32_t(mid * kBlock)) <= budget.bytes)
            lo = mid;
        else
            hi = mid - 1;
    }
    return Error(msg + fmt::format("; the weights and KV caches fit up to -c {} ([model] n_ctx){}, less the room "
                                   "activations need",
                                   lo * kBlock,
                                   plan.sequences > 1 ? fmt::format(" per slot with --parallel {}", plan.sequences)
                                                      : std::string()));
}

Status check_memory_fits(App& app, const std::string& model_path, const RunShape& shape) {
    if (model_path.empty()) return {};
    const Config& config = app.config();
    Registry* reg = TDM_TRY(app.registry());
    auto src = ModelSource::open(model_path);
    if (!src.ok()) return {};  // the loader reports it
    auto probe = probe_architecture(**src, *reg);
    if (!probe.ok()) return {};
    MemoryPlan plan;
    plan.n_ctx = uint32_t(config.model.n_ctx);
    plan.sequences = shape.sequences;
    plan.kv_by_memory = config.model.kv_memory > 0;
    vk::Device* dev = TDM_TRY(app.device());
    const uint64_t max_binding = dev->caps().max_storage_buffer_range;
    add_model(&plan, config, **src, *probe, shape.speculative, shape.sequences, max_binding);
    std::unique_ptr<ModelSource> draft_src;
    for (const std::string& type : spec_types(config)) {
        if (type == "draft" && !config.model.draft_path.empty() && !draft_src) {
            auto d = ModelSource::open(config.model.draft_path);
            if (!d.ok()) continue;
            draft_src = std::move(d).value();
            // a file that holds a draft head alone drafts as that head (make_drafters)
            if (const DraftHeadEntry* h =
                    reg->find_draft_head_source(draft_src->architecture_names(), probe->arch->desc->name)) {
                TDM_TRY(add_draft_head(&plan, config, *h, **src, probe->n_ctx_train, shape.head_sequences,
                                       std::move(draft_src)));
                continue;
            }
            auto dp = probe_architecture(*draft_src, *reg);
            if (dp.ok()) add_model(&plan, config, *draft_src, *dp, true, 1, max_binding);  // one sequence (make_drafters.cpp)
        } else if (const DraftHeadEntry* h = reg->find_draft_head(type, probe->arch->desc->name)) {
            // a head in a file of its own reads -md FILE (make_drafters)
            std::unique_ptr<ModelSource> own;
            if (!h->source_archs.empty() && !config.model.draft_path.empty()) {
                auto d = ModelSource::open(config.model.draft_path);
                if (d.ok()) own = std::move(d).value();
            }
            TDM_TRY(add_draft_head(&plan, config, *h, **src, probe->n_ctx_train, shape.head_sequences, std::move(own)));
        }
    }
    // --spec-auto without a type (or a command that drafts with the carried head by default):
    // make_drafters takes the first head for this architecture that the file carries, after
    // this plan; the plan counts the same one.
    if (spec_types(config).empty() && (config.speculative.auto_select || (shape.carried_head && !speculation_off(config)))) {
        const std::string arch = probe->arch->desc->name;
        for (const DraftHeadEntry& h : reg->draft_heads()) {
            if (!carried_by(h, arch)) continue;
            if (TDM_TRY(add_draft_head(&plan, config, h, **src, probe->n_ctx_train, shape.head_sequences))) break;
        }
    }
    return check_memory_plan(plan, device_memory_budget(*dev));
}

}  // namespace tdm::cli
