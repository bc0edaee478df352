// SPDX-License-Identifier: MIT
// recent_copy.cpp: an out-of-tree tandem plugin in C++17 built with the SDK's
// C++ helpers (<tandem/cpp/tandem.hpp>) against the installed SDK
// (libtandem-dev). It registers one draftless drafter, "recent-copy": find the
// latest earlier occurrence of the last token of the history and propose the
// tokens that followed it there. A teaching example (it scans the whole
// history on every call); the in-tree ngram plugin is the real thing.
//
// Use it:   tandem run -m MODEL.gguf --spec-type recent-copy --plugin-path DIR ...
// Options:  draft_max (from [speculative] draft_max or --draft-max) caps a proposal.
#include <tandem/cpp/tandem.hpp>

#include <algorithm>
#include <cstdint>

namespace {

using namespace tdm::sdk;

// The host's function table, kept from init() to shutdown(): drafters log through it.
Host g_host;

// One object per sequence. The SDK's callbacks call these methods, catch any
// C++ exception, and give the host both the ABI 2 calls (with a status and a
// message) and the ABI 1 ones.
class RecentCopy final : public Drafter {
public:
    explicit RecentCopy(uint64_t draft_max) : Drafter(&g_host, "recent-copy"), draft_max_(draft_max) {}
    ~RecentCopy() override {
        g_host.log(TDM_LOG_DEBUG, "proposed %llu tokens, %llu accepted", (unsigned long long)proposed_,
                   (unsigned long long)accepted_);
    }

    tdm_status begin(const int32_t*, uint64_t, Err) override { return TDM_OK; }  // nothing to index

    tdm_status propose(const int32_t* history, uint64_t n, int32_t* out, uint64_t max, uint64_t* n_out,
                       Err) override {
        *n_out = 0;
        max = std::min(max, draft_max_);
        if (n < 2) return TDM_OK;
        for (uint64_t start = n - 1; start-- > 0;) {  // latest earlier occurrence of the last token
            if (history[start] != history[n - 1]) continue;
            while (*n_out < max && start + 1 + *n_out < n) {
                out[*n_out] = history[start + 1 + *n_out];
                ++*n_out;
            }
            break;
        }
        proposed_ += *n_out;
        return TDM_OK;
    }

    tdm_status accept(const int32_t*, uint64_t, uint64_t, uint64_t n_accepted, Err) override {
        accepted_ += n_accepted;
        return TDM_OK;
    }

private:
    uint64_t draft_max_;
    uint64_t proposed_ = 0, accepted_ = 0;
};

tdm_status create(const tdm_host_api* host, const tdm_options* options, void** out, char* err, size_t err_size) {
    const Err e(err, err_size);
    return guard(e, "recent-copy: create", [&]() -> tdm_status {
        int64_t draft_max = 16;  // an absent option keeps the default
        if (options && host->option_get_int(options, "draft_max", &draft_max) == TDM_OK && draft_max < 1)
            return e.fail(TDM_ERR_INVALID_ARGUMENT, "draft_max = %lld: use 1 or more", (long long)draft_max);
        *out = drafter_handle(new RecentCopy(uint64_t(draft_max)));
        return TDM_OK;
    });
}

// Descriptors live in static storage: the host keeps pointers to them.
const char* const kSpecTypes[] = {"recent-copy", nullptr};
constexpr tdm_drafter_desc kDrafter = drafter_desc("recent-copy", kSpecTypes, create);

tdm_status init(const tdm_host_api* host, tdm_registry* reg, char* err, size_t err_size) {
    const Err e(err, err_size);
    TDM_SDK_TRY(g_host.init(host, "recent-copy", e));  // refuses a table shorter than ABI 1's
    return g_host.register_drafter(reg, kDrafter, e);
}

constexpr tdm_plugin_api kPlugin = PluginApi("recent-copy")
                                       .version("1.0")
                                       .description("SDK example: copies what followed the last token before")
                                       .init(init);

}  // namespace

// The one exported symbol: speaks ABI 2 (it sets the v2 drafter calls).
TDM_SDK_PLUGIN_ENTRY(kPlugin, 2, 2)
