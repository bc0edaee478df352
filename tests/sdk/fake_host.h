/* SPDX-License-Identifier: Apache-2.0 */
// tests/sdk/fake_host.h: a tdm_host_api filled with test functions, for the
// SDK's C++ helpers (tandem/cpp/) without a real host: a model source is a
// FakeSource (metadata and tensors in maps; the tdm_model_source* handed to
// the helpers points at it), weight loads are recorded, the v2 capability
// entries are std::functions a test sets, and log lines are kept.
#pragma once

#include <tandem/tandem.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace sdk_test {

using MetaValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;

struct FakeSource {
    std::string path = "model.gguf";
    tdm_source_format format = TDM_SOURCE_GGUF;
    std::map<std::string, MetaValue> meta;
    std::map<std::string, std::vector<int64_t>> tensors;  // name -> ne (ggml order)

    const tdm_model_source* handle() const { return reinterpret_cast<const tdm_model_source*>(this); }
};

// A weight request as the host saw it (pointers copied out).
struct SeenRequest {
    std::string name;
    uint32_t n_dims = 0;
    int64_t ne[4] = {0, 0, 0, 0};
    uint32_t flags = 0;
    std::vector<int64_t> row_perm, col_perm;
    std::vector<std::string> parts;
    int64_t slab_first = 0, slab_rows = 0;
};

// What the fake host's functions read and record. One per process (the C
// entries take no user pointer); reset() between tests.
struct FakeHostState {
    std::string last_error;
    std::vector<std::string> log;           // "plugin|level|message"
    std::vector<SeenRequest> loads;
    // load_weight: returns this status for a name in `load_fail` (with the
    // message), OK with NULL for an optional absent tensor (names in
    // `absent`), else OK with a non-null weight.
    std::map<std::string, std::pair<tdm_status, std::string>> load_fail;
    std::vector<std::string> absent;
    std::vector<tdm_op_desc> queried;        // query_op calls
    std::function<tdm_status(const tdm_op_desc&)> query_op;  // empty: the entry stays NULL
    std::function<tdm_status(tdm_host_limits*)> get_limits;
    std::function<const void*(const char*, uint32_t, uint32_t*)> get_extension;
    tdm_status register_status = TDM_OK;
    std::vector<std::string> registered;    // descriptor names
    int v2_entry_calls = 0;                  // calls of the poisoned entries (tables shorter than v2)

    void reset() { *this = FakeHostState(); }
};

FakeHostState& fake();

// A full-size table (struct_size = sizeof(tdm_host_api)) over fake(); the v2
// entries are set only where fake() has a function for them, at the time of
// the call.
tdm_host_api fake_host_api();

// The same table with struct_size = TDM_V1_SIZEOF_HOST_API, and the bytes of
// the v2 entries holding functions that count calls in fake().v2_entry_calls:
// a reader that honours struct_size never calls them.
tdm_host_api fake_v1_host_api_with_poisoned_tail();

}  // namespace sdk_test
