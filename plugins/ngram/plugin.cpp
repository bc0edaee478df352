// SPDX-License-Identifier: Apache-2.0
// plugins/ngram/plugin.cpp: tdm_plugin_negotiate and the five draftless
// drafters of llama.cpp behind the public ABI (tandem.h section 7). Each
// descriptor's name is llama.cpp's statistics name (ngram_simple, ...), its
// spec types the --spec-type spellings (ngram-simple, ...). This file is only
// glue: options in, the C++ drafters (drafter.h) behind the SDK's Drafter
// (tandem/cpp/drafter.hpp), which sets both the v2 calls (a failure goes back
// to the host with a message) and the v1 ones (a failure is logged once and
// the drafter proposes nothing until the next sequence) and keeps every C++
// exception on this side of the ABI (contract rule 4). ngram-simple and
// ngram-map-k4v also propose branches (tdm.drafter_branches) where the host
// offers it; the others know one continuation per key and draft chains.
// Not here: any n-gram logic.
#include <tandem/cpp/tandem.hpp>
#include <tandem/ext/drafter_branches.h>

#include <algorithm>
#include <memory>
#include <span>
#include <string>

#include "map_k.h"
#include "map_k4v.h"
#include "ngram_cache.h"
#include "ngram_mod.h"
#include "ngram_simple.h"

namespace ngram {
namespace {

using tdm::sdk::Err;

constexpr const char* kPluginName = "ngram";

// The host table as init received it; drafters log through it. Set in init,
// cleared in shutdown (after every drafter is gone).
tdm::sdk::Host g_host;

void log_message(tdm_log_level level, const std::string& msg) {
    if (g_host.valid()) g_host.log(level, "%s", msg.c_str());
}

std::span<const int32_t> tokens(const int32_t* p, uint64_t n) { return {p, p ? size_t(n) : 0}; }

// One drafter object as the host sees it: a SeqDrafter behind the SDK's calls.
// SeqDrafters report no errors of their own (their tables skip what they
// cannot use); what can fail is memory, which guard() turns into
// TDM_ERR_OUT_OF_MEMORY naming the drafter and the call.
class NgramDrafter final : public tdm::sdk::Drafter {
public:
    NgramDrafter(const char* name, std::unique_ptr<SeqDrafter> d) : Drafter(&g_host, name), d_(std::move(d)) {}

    tdm_status begin(const int32_t* prompt, uint64_t n_prompt, Err) override {
        d_->begin(tokens(prompt, n_prompt));
        return TDM_OK;
    }
    tdm_status propose(const int32_t* history, uint64_t n_history, int32_t* out, uint64_t max, uint64_t* n_out,
                       Err) override {
        const size_t k = d_->propose(tokens(history, n_history), std::span<int32_t>(out, size_t(max)));
        *n_out = std::min<uint64_t>(k, max);
        return TDM_OK;
    }
    tdm_status propose_branches(const int32_t* history, uint64_t n_history, uint32_t max_branches, uint32_t max_len,
                                int32_t* out, uint32_t* lens, uint32_t* n_branches) {
        const size_t room = size_t(max_branches) * max_len;
        const size_t n = d_->propose_branches(tokens(history, n_history), max_len, std::span<int32_t>(out, room),
                                              std::span<uint32_t>(lens, max_branches));
        *n_branches = uint32_t(std::min<size_t>(n, max_branches));
        return TDM_OK;
    }
    tdm_status accept(const int32_t* history, uint64_t n_history, uint64_t n_drafted, uint64_t n_accepted,
                      Err) override {
        d_->accept(tokens(history, n_history), size_t(n_drafted), size_t(n_accepted));
        return TDM_OK;
    }
    // ngram-cache: merges what it learnt into its statistics file; the message
    // names the file and what went wrong ("... (not overwritten)").
    tdm_status save(Err err) override {
        std::string why;
        if (!d_->save(&why)) return err.fail(TDM_ERR_INVALID_ARGUMENT, "%s: %s", name(), why.c_str());
        return TDM_OK;
    }

private:
    std::unique_ptr<SeqDrafter> d_;
};

// tdm.drafter_branches' callback (every object of this plugin is an NgramDrafter).
tdm_status propose_branches(void* p, const int32_t* history, uint64_t n_history, uint32_t max_branches,
                            uint32_t max_len, int32_t* out, uint32_t* lens, uint32_t* n_branches, char* err,
                            size_t err_size) {
    const Err e(err, err_size);
    auto* d = static_cast<NgramDrafter*>(static_cast<tdm::sdk::Drafter*>(p));
    if (!n_branches || (max_branches && (!out || !lens)) || (!history && n_history))
        return e.fail(TDM_ERR_INVALID_ARGUMENT, "propose_branches: null argument");
    *n_branches = 0;
    return tdm::sdk::drafter_call(d, "propose_branches", e, [&] {
        return d->propose_branches(history, n_history, max_branches, max_len, out, lens, n_branches);
    });
}

using Factory = std::unique_ptr<SeqDrafter> (*)(const NgramParams&, std::string*);

// Reads the options (errors name the option, its flag and range) and makes
// the drafter; ngram-cache also loads its statistics file here, and a file
// that exists but cannot be read fails with the file's name and the problem.
tdm_status create_with(Factory make, const char* name, const tdm_host_api* host, const tdm_options* options,
                       void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    if (!host || !out) return e.fail(TDM_ERR_INVALID_ARGUMENT, "%s: null host or output pointer", name);
    char what[64];
    std::snprintf(what, sizeof what, "%s: create", name);
    return tdm::sdk::guard(e, what, [&]() -> tdm_status {
        NgramParams p;
        std::string why;
        if (!read_params(host, options, &p, &why)) return e.fail(TDM_ERR_INVALID_ARGUMENT, "%s", why.c_str());
        p.log = log_message;
        std::unique_ptr<SeqDrafter> d = make(p, &why);
        if (!d) return e.fail(TDM_ERR_INVALID_ARGUMENT, "%s", why.c_str());
        *out = tdm::sdk::drafter_handle(new NgramDrafter(name, std::move(d)));
        return TDM_OK;
    });
}

// ---------------------------------------------------------------- the five drafters

std::unique_ptr<SeqDrafter> make_simple(const NgramParams& p, std::string*) { return std::make_unique<NgramSimple>(p); }
std::unique_ptr<SeqDrafter> make_map_k(const NgramParams& p, std::string*) { return std::make_unique<NgramMapK>(p); }
std::unique_ptr<SeqDrafter> make_map_k4v(const NgramParams& p, std::string*) {
    return std::make_unique<NgramMapK4v>(p);
}
std::unique_ptr<SeqDrafter> make_mod(const NgramParams& p, std::string*) {
    return std::make_unique<NgramMod>(p, ngram_mod_shared_pool());
}
std::unique_ptr<SeqDrafter> make_cache(const NgramParams& p, std::string* err) {
    return NgramCacheDrafter::create(p, err);
}

#define NGRAM_CREATE(fn, factory, name)                                                                    \
    tdm_status fn(const tdm_host_api* host, const tdm_options* o, void** out, char* err, size_t err_size) { \
        return create_with(factory, name, host, o, out, err, err_size);                                     \
    }
NGRAM_CREATE(create_simple, make_simple, "ngram_simple")
NGRAM_CREATE(create_map_k, make_map_k, "ngram_map_k")
NGRAM_CREATE(create_map_k4v, make_map_k4v, "ngram_map_k4v")
NGRAM_CREATE(create_mod, make_mod, "ngram_mod")
NGRAM_CREATE(create_cache, make_cache, "ngram_cache")
#undef NGRAM_CREATE

const char* const kSimpleTypes[] = {"ngram-simple", nullptr};
const char* const kMapKTypes[] = {"ngram-map-k", nullptr};
const char* const kMapK4vTypes[] = {"ngram-map-k4v", nullptr};
const char* const kModTypes[] = {"ngram-mod", nullptr};
const char* const kCacheTypes[] = {"ngram-cache", nullptr};

using tdm::sdk::drafter_desc;

// Only ngram-cache persists anything: the others have no save.
constexpr tdm_drafter_desc kDrafters[] = {
    drafter_desc("ngram_simple", kSimpleTypes, create_simple).save(nullptr),
    drafter_desc("ngram_map_k", kMapKTypes, create_map_k).save(nullptr),
    drafter_desc("ngram_map_k4v", kMapK4vTypes, create_map_k4v).save(nullptr),
    drafter_desc("ngram_mod", kModTypes, create_mod).save(nullptr),
    drafter_desc("ngram_cache", kCacheTypes, create_cache),
};

tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    const Err e(err, err_size);
    TDM_SDK_TRY(g_host.init(host, kPluginName, e));
    for (const tdm_drafter_desc& d : kDrafters) TDM_SDK_TRY(g_host.register_drafter(reg, d, e));
    // a host without the extension verifies chains only
    const auto* branches = static_cast<const tdm_ext_drafter_branches*>(
        g_host.extension(TDM_EXT_DRAFTER_BRANCHES, TDM_EXT_DRAFTER_BRANCHES_VERSION));
    for (const char* name : {"ngram_simple", "ngram_map_k4v"})
        if (branches && branches->set_propose_branches(reg, name, propose_branches) != TDM_OK)
            return e.fail(TDM_ERR_INTERNAL, "%s: set_propose_branches: %s", name, g_host.last_error());
    return TDM_OK;
}

void shutdown() {
    ngram_mod_release_shared_pool();
    g_host = tdm::sdk::Host();
}

constexpr tdm_plugin_api kPlugin =
    tdm::sdk::PluginApi(kPluginName)
        .version("0.1.0")
        .description("draftless drafters: ngram-simple, ngram-map-k, ngram-map-k4v, ngram-mod, ngram-cache")
        .init(init)
        .shutdown(shutdown);

}  // namespace
}  // namespace ngram

TDM_SDK_PLUGIN_ENTRY(ngram::kPlugin, 2, 2)
