// plugins/ngram/plugin.cpp: tdm_plugin_negotiate and the five draftless
// drafters of llama.cpp behind the public ABI (tandem.h section 7). Each
// descriptor's name is llama.cpp's statistics name (ngram_simple, ...), its
// spec types the --spec-type spellings (ngram-simple, ...). This file is only
// glue: options in, C callbacks to the C++ drafters (drafter.h), and a fence
// that keeps every C++ exception on this side of the ABI (contract rule 4).
// Not here: any n-gram logic.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "map_k.h"
#include "map_k4v.h"
#include "ngram_cache.h"
#include "ngram_mod.h"
#include "ngram_simple.h"

namespace ngram {
namespace {

const tdm_host_api* g_host = nullptr;

void log_message(tdm_log_level level, const std::string& msg) {
    if (g_host && g_host->log) g_host->log(level, "ngram", msg.c_str());
}

tdm_status fail(char* err, size_t err_size, tdm_status st, const std::string& msg) {
    if (err && err_size) std::snprintf(err, err_size, "%s", msg.c_str());
    return st;
}

// One drafter object as the host sees it. A drafter that threw (out of
// memory inside a table) is retired: it proposes nothing from then on rather
// than drafting from a half-updated table.
struct Handle {
    std::unique_ptr<SeqDrafter> d;
    const char* name = "";
    bool broken = false;
};

void retire(Handle* h, const char* what) {
    if (!h->broken) log_message(TDM_LOG_WARN, std::string(h->name) + ": " + what + "; this drafter stops proposing");
    h->broken = true;
}

using Factory = std::unique_ptr<SeqDrafter> (*)(const NgramParams&, std::string*);

tdm_status create_with(Factory make, const char* name, const tdm_host_api* host, const tdm_options* options,
                       void** out, char* err, size_t err_size) {
    if (!host || !out) return fail(err, err_size, TDM_ERR_INVALID_ARGUMENT, "null host or output pointer");
    try {
        NgramParams p;
        std::string why;
        if (!read_params(host, options, &p, &why)) return fail(err, err_size, TDM_ERR_INVALID_ARGUMENT, why);
        p.log = log_message;
        auto h = std::make_unique<Handle>();
        h->name = name;
        h->d = make(p, &why);
        if (!h->d) return fail(err, err_size, TDM_ERR_INVALID_ARGUMENT, why);
        *out = h.release();
        return TDM_OK;
    } catch (const std::bad_alloc&) {
        return fail(err, err_size, TDM_ERR_OUT_OF_MEMORY, std::string(name) + ": out of memory");
    } catch (const std::exception& e) {
        return fail(err, err_size, TDM_ERR_INTERNAL, std::string(name) + ": " + e.what());
    } catch (...) {
        return fail(err, err_size, TDM_ERR_INTERNAL, std::string(name) + ": unknown error");
    }
}

void destroy(void* d) { delete static_cast<Handle*>(d); }

void begin(void* d, const int32_t* prompt, uint64_t n_prompt) {
    Handle* h = static_cast<Handle*>(d);
    if (!h || h->broken) return;
    try {
        h->d->begin(std::span<const int32_t>(prompt, prompt ? size_t(n_prompt) : 0));
    } catch (...) {
        retire(h, "begin failed (out of memory?)");
    }
}

uint64_t propose(void* d, const int32_t* history, uint64_t n_history, int32_t* out, uint64_t max) {
    Handle* h = static_cast<Handle*>(d);
    if (!h || h->broken || !out || max == 0) return 0;
    try {
        const size_t k = h->d->propose(std::span<const int32_t>(history, history ? size_t(n_history) : 0),
                                       std::span<int32_t>(out, size_t(max)));
        return std::min<uint64_t>(k, max);
    } catch (...) {
        retire(h, "propose failed (out of memory?)");
        return 0;
    }
}

void accept(void* d, const int32_t* history, uint64_t n_history, uint64_t n_drafted, uint64_t n_accepted) {
    Handle* h = static_cast<Handle*>(d);
    if (!h || h->broken) return;
    try {
        h->d->accept(std::span<const int32_t>(history, history ? size_t(n_history) : 0), size_t(n_drafted),
                     size_t(n_accepted));
    } catch (...) {
        retire(h, "accept failed (out of memory?)");
    }
}

tdm_status save(void* d, char* err, size_t err_size) {
    Handle* h = static_cast<Handle*>(d);
    if (!h) return fail(err, err_size, TDM_ERR_INVALID_ARGUMENT, "null drafter");
    try {
        std::string why;
        if (!h->d->save(&why)) return fail(err, err_size, TDM_ERR_INVALID_ARGUMENT, why);
        return TDM_OK;
    } catch (const std::bad_alloc&) {
        return fail(err, err_size, TDM_ERR_OUT_OF_MEMORY, std::string(h->name) + ": out of memory while saving");
    } catch (...) {
        return fail(err, err_size, TDM_ERR_INTERNAL, std::string(h->name) + ": saving failed");
    }
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

const tdm_drafter_desc kDrafters[] = {
    {sizeof(tdm_drafter_desc), "ngram_simple", kSimpleTypes, create_simple, destroy, begin, propose, accept, nullptr},
    {sizeof(tdm_drafter_desc), "ngram_map_k", kMapKTypes, create_map_k, destroy, begin, propose, accept, nullptr},
    {sizeof(tdm_drafter_desc), "ngram_map_k4v", kMapK4vTypes, create_map_k4v, destroy, begin, propose, accept,
     nullptr},
    {sizeof(tdm_drafter_desc), "ngram_mod", kModTypes, create_mod, destroy, begin, propose, accept, nullptr},
    {sizeof(tdm_drafter_desc), "ngram_cache", kCacheTypes, create_cache, destroy, begin, propose, accept, save},
};

tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    if (!host || host->struct_size < sizeof(tdm_host_api))
        return fail(err, err_size, TDM_ERR_ABI_MISMATCH, "host API table too small");
    g_host = host;
    for (const tdm_drafter_desc& d : kDrafters)
        if (host->register_drafter(reg, &d) != TDM_OK)
            return fail(err, err_size, TDM_ERR_INTERNAL, std::string("registering ") + d.name + ": " + host->last_error());
    return TDM_OK;
}

void shutdown() {
    ngram_mod_release_shared_pool();
    g_host = nullptr;
}

const tdm_plugin_api kPlugin = {
    sizeof(tdm_plugin_api), "ngram", "0.1.0",
    "draftless drafters: ngram-simple, ngram-map-k, ngram-map-k4v, ngram-mod, ngram-cache", init, shutdown,
};

}  // namespace
}  // namespace ngram

extern "C" TDM_PLUGIN_EXPORT tdm_status tdm_plugin_negotiate(tdm_negotiate* n) {
    return tdm_negotiate_v1(n, &ngram::kPlugin);
}
