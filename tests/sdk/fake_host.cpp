// SPDX-License-Identifier: Apache-2.0
// tests/sdk/fake_host.cpp
#include "fake_host.h"

#include <algorithm>
#include <cstring>

namespace sdk_test {
namespace {

const FakeSource& S(const tdm_model_source* src) { return *reinterpret_cast<const FakeSource*>(src); }

tdm_status error(tdm_status st, std::string msg) {
    fake().last_error = std::move(msg);
    return st;
}

void api_log(tdm_log_level level, const char* plugin, const char* message) {
    fake().log.push_back(std::string(plugin) + "|" + std::to_string(int(level)) + "|" + message);
}
const char* api_last_error() { return fake().last_error.c_str(); }

tdm_status api_register(const char* name) {
    if (fake().register_status != TDM_OK) return error(fake().register_status, std::string("duplicate name ") + name);
    fake().registered.push_back(name);
    return TDM_OK;
}
tdm_status api_register_arch(tdm_registry*, const tdm_arch_desc* d) { return api_register(d->name); }
tdm_status api_register_draft_head(tdm_registry*, const tdm_draft_head_desc* d) { return api_register(d->name); }
tdm_status api_register_drafter(tdm_registry*, const tdm_drafter_desc* d) { return api_register(d->name); }

tdm_source_format api_source_format(const tdm_model_source* src) { return S(src).format; }
const char* api_source_path(const tdm_model_source* src) { return S(src).path.c_str(); }
int api_meta_has(const tdm_model_source* src, const char* key) { return S(src).meta.count(key) ? 1 : 0; }

const MetaValue* find(const tdm_model_source* src, const char* key) {
    auto it = S(src).meta.find(key);
    return it == S(src).meta.end() ? nullptr : &it->second;
}

tdm_status not_found(const char* key) { return error(TDM_ERR_NOT_FOUND, std::string("key '") + key + "' not found"); }
tdm_status wrong_type(const char* key, const char* want) {
    return error(TDM_ERR_INVALID_ARGUMENT, std::string("key '") + key + "' is not " + want);
}

tdm_status api_meta_get_int(const tdm_model_source* src, const char* key, int64_t* out) {
    const MetaValue* v = find(src, key);
    if (!v) return not_found(key);
    if (auto i = std::get_if<int64_t>(v)) return *out = *i, TDM_OK;
    if (auto b = std::get_if<bool>(v)) return *out = *b, TDM_OK;
    return wrong_type(key, "an integer");
}
tdm_status api_meta_get_float(const tdm_model_source* src, const char* key, double* out) {
    const MetaValue* v = find(src, key);
    if (!v) return not_found(key);
    if (auto d = std::get_if<double>(v)) return *out = *d, TDM_OK;
    if (auto i = std::get_if<int64_t>(v)) return *out = double(*i), TDM_OK;
    return wrong_type(key, "a number");
}
tdm_status api_meta_get_bool(const tdm_model_source* src, const char* key, int* out) {
    const MetaValue* v = find(src, key);
    if (!v) return not_found(key);
    if (auto b = std::get_if<bool>(v)) return *out = *b, TDM_OK;
    return wrong_type(key, "a bool");
}
tdm_status api_meta_get_string(const tdm_model_source* src, const char* key, const char** out) {
    const MetaValue* v = find(src, key);
    if (!v) return not_found(key);
    if (auto s = std::get_if<std::string>(v)) return *out = s->c_str(), TDM_OK;
    return wrong_type(key, "a string");
}
tdm_status api_meta_get_int_array(const tdm_model_source* src, const char* key, int64_t* out, uint64_t cap,
                                  uint64_t* n) {
    const MetaValue* v = find(src, key);
    if (!v) return not_found(key);
    auto a = std::get_if<std::vector<int64_t>>(v);
    if (!a) return wrong_type(key, "an integer array");
    for (uint64_t i = 0; i < cap && i < a->size(); ++i) out[i] = (*a)[i];
    *n = a->size();
    return TDM_OK;
}
tdm_status api_tensor_info(const tdm_model_source* src, const char* name, tdm_tensor_info* out) {
    auto it = S(src).tensors.find(name);
    if (it == S(src).tensors.end()) return error(TDM_ERR_NOT_FOUND, std::string("missing tensor ") + name);
    out->type = TDM_DTYPE_F32;
    out->n_dims = uint32_t(it->second.size());
    for (size_t i = 0; i < 4; ++i) out->ne[i] = i < it->second.size() ? it->second[i] : 1;
    return TDM_OK;
}

// Any non-null address serves as a weight handle.
int g_weight;

tdm_status api_load_weight(tdm_loader*, const tdm_weight_request* r, const tdm_weight** out) {
    SeenRequest s;
    s.name = r->name ? r->name : "";
    s.n_dims = r->n_dims;
    std::copy(r->ne, r->ne + 4, s.ne);
    s.flags = r->flags;
    if (r->row_perm) s.row_perm.assign(r->row_perm, r->row_perm + r->n_row_perm);
    if (r->col_perm) s.col_perm.assign(r->col_perm, r->col_perm + r->n_col_perm);
    for (uint32_t i = 0; i < r->n_parts; ++i) s.parts.push_back(r->parts[i]);
    s.slab_first = r->slab_row_first;
    s.slab_rows = r->slab_rows;
    fake().loads.push_back(s);
    auto f = fake().load_fail.find(s.name);
    if (f != fake().load_fail.end()) return error(f->second.first, f->second.second);
    if (std::find(fake().absent.begin(), fake().absent.end(), s.name) != fake().absent.end()) {
        if (!(r->flags & TDM_WEIGHT_OPTIONAL)) return error(TDM_ERR_NOT_FOUND, "missing tensor " + s.name);
        *out = nullptr;
        return TDM_OK;
    }
    *out = reinterpret_cast<const tdm_weight*>(&g_weight);
    return TDM_OK;
}

tdm_status api_graph_weight_rows(tdm_graph*, const tdm_weight*, uint64_t, tdm_tensor*) { return TDM_ERR_INTERNAL; }

tdm_status api_option_get_int(const tdm_options*, const char* key, int64_t*) { return not_found(key); }
tdm_status api_option_get_string(const tdm_options*, const char* key, const char**) { return not_found(key); }

tdm_status api_query_op(const tdm_op_desc* d) {
    fake().queried.push_back(*d);
    return fake().query_op ? fake().query_op(*d) : TDM_ERR_INTERNAL;
}
tdm_status api_get_limits(tdm_host_limits* out) { return fake().get_limits ? fake().get_limits(out) : TDM_ERR_INTERNAL; }
const void* api_get_extension(const char* name, uint32_t v, uint32_t* version) {
    return fake().get_extension ? fake().get_extension(name, v, version) : nullptr;
}

tdm_status poisoned_query_op(const tdm_op_desc*) { return ++fake().v2_entry_calls, TDM_OK; }
tdm_status poisoned_query_weight_type(tdm_dtype, uint32_t) { return ++fake().v2_entry_calls, TDM_OK; }
tdm_status poisoned_get_limits(tdm_host_limits*) { return ++fake().v2_entry_calls, TDM_OK; }
const void* poisoned_get_extension(const char*, uint32_t, uint32_t*) {
    ++fake().v2_entry_calls;
    return &g_weight;
}

}  // namespace

FakeHostState& fake() {
    static FakeHostState s;
    return s;
}

tdm_host_api fake_host_api() {
    tdm_host_api h;
    std::memset(&h, 0, sizeof h);
    h.struct_size = sizeof h;
    h.abi_version = 2;
    h.host_version = "fake";
    h.log = api_log;
    h.last_error = api_last_error;
    h.register_arch = api_register_arch;
    h.register_draft_head = api_register_draft_head;
    h.register_drafter = api_register_drafter;
    h.source_format = api_source_format;
    h.source_path = api_source_path;
    h.meta_has = api_meta_has;
    h.meta_get_int = api_meta_get_int;
    h.meta_get_float = api_meta_get_float;
    h.meta_get_bool = api_meta_get_bool;
    h.meta_get_string = api_meta_get_string;
    h.meta_get_int_array = api_meta_get_int_array;
    h.tensor_info = api_tensor_info;
    h.load_weight = api_load_weight;
    h.option_get_int = api_option_get_int;
    h.option_get_string = api_option_get_string;
    h.graph_weight_rows = api_graph_weight_rows;  // the last ABI 1 entry
    if (fake().query_op) h.query_op = api_query_op;
    if (fake().get_limits) h.get_limits = api_get_limits;
    if (fake().get_extension) h.get_extension = api_get_extension;
    return h;
}

tdm_host_api fake_v1_host_api_with_poisoned_tail() {
    tdm_host_api h = fake_host_api();
    h.struct_size = TDM_V1_SIZEOF_HOST_API;
    h.abi_version = 1;
    h.query_op = poisoned_query_op;
    h.query_weight_type = poisoned_query_weight_type;
    h.get_limits = poisoned_get_limits;
    h.get_extension = poisoned_get_extension;
    return h;
}

}  // namespace sdk_test
