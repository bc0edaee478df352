// SPDX-License-Identifier: Apache-2.0
// host/plugin/host_api.cpp: the tdm_host_api table (tandem.h §4): C entry points
// that validate their arguments and forward to the host's C++ objects. Nothing
// here may throw or abort on a plugin's mistake: it returns a status and leaves
// a message for last_error().
#include <nlohmann/json.hpp>

#include <cstring>
#include <string>

#include "common/log.h"
#include "ops/op_def.h"
#include "plugin/abi_structs.h"
#include "plugin/capabilities.h"
#include "plugin/handles.h"
#include "plugin/registry.h"

namespace tdm {
namespace {

thread_local std::string t_last_error;

// ---- metadata -------------------------------------------------------------------------

const nlohmann::json* hf_lookup(const ModelSource& s, const char* key) {
    const nlohmann::json* j = s.hf_config();
    if (!j) return nullptr;
    std::string_view k(key);
    while (!k.empty()) {
        const size_t dot = k.find('.');
        const std::string part(k.substr(0, dot));
        if (j->is_array()) {  // "layer_types.3": an element of an array
            if (part.empty() || part.size() > 9 || part.find_first_not_of("0123456789") != std::string::npos)
                return nullptr;
            const size_t i = std::stoul(part);
            if (i >= j->size()) return nullptr;
            j = &(*j)[i];
        } else {
            if (!j->is_object()) return nullptr;
            auto it = j->find(part);
            if (it == j->end()) return nullptr;
            j = &*it;
        }
        if (dot == std::string_view::npos) break;
        k.remove_prefix(dot + 1);
    }
    // transformers writes unset options as null ("num_global_key_value_heads":
    // null in Gemma 4 E2B): the same as an absent key, so defaults apply
    return j->is_null() ? nullptr : j;
}

// A key or name the plugin passed: read up to kPluginNameMax bytes, never past.
// Null, or no NUL within the bound: an error naming the call.
tdm_status read_name(const char* s, const char* call, std::string* out) {
    if (!s) return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("{}: null name", call));
    auto n = plugin_name(s, call);
    if (!n.ok()) return set_last_error(n.error());
    *out = std::move(n).value();
    return TDM_OK;
}

tdm_status bad_source(const tdm_model_source* src) {
    return set_last_error(TDM_ERR_INVALID_ARGUMENT, "null model source");
}

tdm_status not_found(const tdm_model_source* src, const char* key) {
    return set_last_error(TDM_ERR_NOT_FOUND, fmt::format("{}: no metadata key '{}'", src->src->path(), key ? key : "(null)"));
}

tdm_source_format api_source_format(const tdm_model_source* src) {
    return src && src->src->format() == SourceFormat::safetensors ? TDM_SOURCE_SAFETENSORS : TDM_SOURCE_GGUF;
}

const char* api_source_path(const tdm_model_source* src) { return src ? src->src->path().c_str() : ""; }

int api_meta_has(const tdm_model_source* src, const char* plugin_key) {
    std::string k;
    if (!src || read_name(plugin_key, "meta_has", &k) != TDM_OK) return 0;
    const char* key = k.c_str();
    if (const GgufFile* g = src->src->gguf()) return g->find(key) != nullptr;
    return hf_lookup(*src->src, key) != nullptr;
}

tdm_status api_meta_get_int(const tdm_model_source* src, const char* plugin_key, int64_t* out) {
    if (!src || !plugin_key || !out) return bad_source(src);
    std::string k;
    if (tdm_status st = read_name(plugin_key, "meta_get_int", &k); st != TDM_OK) return st;
    const char* key = k.c_str();
    if (const GgufFile* g = src->src->gguf()) {
        if (!g->find(key)) return not_found(src, key);
        auto v = g->get_int(key);
        if (!v.ok()) {
            auto b = g->get_bool(key);
            if (!b.ok()) return set_last_error(TDM_ERR_BAD_MODEL, v.error().message());
            *out = *b ? 1 : 0;
            return TDM_OK;
        }
        *out = *v;
        return TDM_OK;
    }
    const nlohmann::json* j = hf_lookup(*src->src, key);
    if (!j) return not_found(src, key);
    if (j->is_boolean()) {
        *out = j->get<bool>() ? 1 : 0;
        return TDM_OK;
    }
    if (!j->is_number_integer() && !j->is_number_unsigned())
        return set_last_error(TDM_ERR_BAD_MODEL, fmt::format("{}: '{}' is not an integer", src->src->path(), key));
    *out = j->get<int64_t>();
    return TDM_OK;
}

tdm_status api_meta_get_float(const tdm_model_source* src, const char* plugin_key, double* out) {
    if (!src || !plugin_key || !out) return bad_source(src);
    std::string k;
    if (tdm_status st = read_name(plugin_key, "meta_get_float", &k); st != TDM_OK) return st;
    const char* key = k.c_str();
    if (const GgufFile* g = src->src->gguf()) {
        if (!g->find(key)) return not_found(src, key);
        auto v = g->get_float(key);
        if (v.ok()) {
            *out = *v;
            return TDM_OK;
        }
        auto i = g->get_int(key);
        if (!i.ok()) return set_last_error(TDM_ERR_BAD_MODEL, v.error().message());
        *out = double(*i);
        return TDM_OK;
    }
    const nlohmann::json* j = hf_lookup(*src->src, key);
    if (!j) return not_found(src, key);
    if (!j->is_number())
        return set_last_error(TDM_ERR_BAD_MODEL, fmt::format("{}: '{}' is not a number", src->src->path(), key));
    *out = j->get<double>();
    return TDM_OK;
}

tdm_status api_meta_get_bool(const tdm_model_source* src, const char* plugin_key, int* out) {
    if (!src || !plugin_key || !out) return bad_source(src);
    std::string k;
    if (tdm_status st = read_name(plugin_key, "meta_get_bool", &k); st != TDM_OK) return st;
    const char* key = k.c_str();
    if (const GgufFile* g = src->src->gguf()) {
        if (!g->find(key)) return not_found(src, key);
        auto v = g->get_bool(key);
        if (!v.ok()) return set_last_error(TDM_ERR_BAD_MODEL, v.error().message());
        *out = *v ? 1 : 0;
        return TDM_OK;
    }
    const nlohmann::json* j = hf_lookup(*src->src, key);
    if (!j) return not_found(src, key);
    if (!j->is_boolean())
        return set_last_error(TDM_ERR_BAD_MODEL, fmt::format("{}: '{}' is not a boolean", src->src->path(), key));
    *out = j->get<bool>() ? 1 : 0;
    return TDM_OK;
}

tdm_status api_meta_get_string(const tdm_model_source* src, const char* plugin_key, const char** out) {
    if (!src || !plugin_key || !out) return bad_source(src);
    std::string k;
    if (tdm_status st = read_name(plugin_key, "meta_get_string", &k); st != TDM_OK) return st;
    const char* key = k.c_str();
    std::lock_guard lock(src->strings_mutex);
    if (auto it = src->strings.find(std::string_view(key)); it != src->strings.end()) {
        *out = it->second.c_str();
        return TDM_OK;
    }
    std::string value;
    if (const GgufFile* g = src->src->gguf()) {
        if (!g->find(key)) return not_found(src, key);
        auto v = g->get_string(key);
        if (!v.ok()) return set_last_error(TDM_ERR_BAD_MODEL, v.error().message());
        value = std::move(v).value();
    } else {
        const nlohmann::json* j = hf_lookup(*src->src, key);
        if (!j) return not_found(src, key);
        if (!j->is_string())
            return set_last_error(TDM_ERR_BAD_MODEL, fmt::format("{}: '{}' is not a string", src->src->path(), key));
        value = j->get<std::string>();
    }
    *out = src->strings.emplace(key, std::move(value)).first->second.c_str();
    return TDM_OK;
}

template <class T>
tdm_status copy_array(const std::vector<T>& v, T* out, uint64_t cap, uint64_t* n) {
    if (n) *n = v.size();
    for (uint64_t i = 0; i < v.size() && i < cap && out; ++i) out[i] = v[i];
    return TDM_OK;
}

tdm_status api_meta_get_int_array(const tdm_model_source* src, const char* plugin_key, int64_t* out, uint64_t cap,
                                  uint64_t* n) {
    if (!src || !plugin_key) return bad_source(src);
    std::string k;
    if (tdm_status st = read_name(plugin_key, "meta_get_int_array", &k); st != TDM_OK) return st;
    const char* key = k.c_str();
    if (const GgufFile* g = src->src->gguf()) {
        if (!g->find(key)) return not_found(src, key);
        auto v = g->get_int_array(key);
        if (!v.ok()) {
            // A BOOL array reads as 0/1 (tandem.h: integer getters accept bools), as a JSON
            // array of booleans does below: gemma4's sliding_window_pattern is one.
            auto b = g->get_bool_array(key);
            if (!b.ok()) return set_last_error(TDM_ERR_BAD_MODEL, v.error().message());
            return copy_array(std::vector<int64_t>(b->begin(), b->end()), out, cap, n);
        }
        return copy_array(*v, out, cap, n);
    }
    const nlohmann::json* j = hf_lookup(*src->src, key);
    if (!j) return not_found(src, key);
    std::vector<int64_t> v;
    if (!j->is_array()) return set_last_error(TDM_ERR_BAD_MODEL, fmt::format("'{}' is not an array", key));
    for (const auto& e : *j) {
        if (!e.is_number_integer() && !e.is_boolean())
            return set_last_error(TDM_ERR_BAD_MODEL, fmt::format("'{}' is not an integer array", key));
        v.push_back(e.is_boolean() ? int64_t(e.get<bool>()) : e.get<int64_t>());
    }
    return copy_array(v, out, cap, n);
}

tdm_status api_meta_get_float_array(const tdm_model_source* src, const char* plugin_key, double* out, uint64_t cap,
                                    uint64_t* n) {
    if (!src || !plugin_key) return bad_source(src);
    std::string k;
    if (tdm_status st = read_name(plugin_key, "meta_get_float_array", &k); st != TDM_OK) return st;
    const char* key = k.c_str();
    if (const GgufFile* g = src->src->gguf()) {
        if (!g->find(key)) return not_found(src, key);
        auto v = g->get_float_array(key);
        if (!v.ok()) return set_last_error(TDM_ERR_BAD_MODEL, v.error().message());
        return copy_array(*v, out, cap, n);
    }
    const nlohmann::json* j = hf_lookup(*src->src, key);
    if (!j) return not_found(src, key);
    std::vector<double> v;
    if (!j->is_array()) return set_last_error(TDM_ERR_BAD_MODEL, fmt::format("'{}' is not an array", key));
    for (const auto& e : *j) {
        if (!e.is_number()) return set_last_error(TDM_ERR_BAD_MODEL, fmt::format("'{}' is not a number array", key));
        v.push_back(e.get<double>());
    }
    return copy_array(v, out, cap, n);
}

// Fills a struct the plugin passed, up to its struct_size (abi_structs.h).
template <class T>
tdm_status write_out(T* out, const T& value, const char* what) {
    std::string err;
    const tdm_status st = write_abi_struct(out, value, what, &err);
    return st == TDM_OK ? st : set_last_error(st, std::move(err));
}

tdm_status api_tensor_info(const tdm_model_source* src, const char* plugin_name_arg, tdm_tensor_info* out) {
    if (!src || !plugin_name_arg || !out) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "tensor_info: null argument");
    std::string name;
    if (tdm_status st = read_name(plugin_name_arg, "tensor_info", &name); st != TDM_OK) return st;
    const SourceTensor* t = src->src->find(name);
    if (!t) return set_last_error(TDM_ERR_NOT_FOUND, fmt::format("{}: no tensor '{}'", src->src->path(), name));
    tdm_tensor_info info{};
    info.struct_size = sizeof info;
    info.type = dtype_traits(t->type) ? tdm_dtype(t->type) : TDM_DTYPE_INVALID;
    info.n_dims = uint32_t(std::max(1, t->n_dims));
    for (int i = 0; i < 4; ++i) info.ne[i] = t->ne[i];
    return write_out(out, info, "tensor_info: tdm_tensor_info");
}

// ---- weights ---------------------------------------------------------------------------

// A copy of the plugin's request (the bytes of its struct_size, the rest zero) whose
// name and part names point at the host's bounded copies in `names`.
tdm_status bounded_weight_request(const tdm_weight_request* in, tdm_weight_request* out,
                                  std::vector<std::string>* names, std::vector<const char*>* parts) {
    constexpr size_t kBase = offsetof(tdm_weight_request, parts);
    const uint32_t size = in->struct_size;
    std::memset(out, 0, sizeof *out);
    std::memcpy(out, in, std::min<size_t>(size, sizeof *out));
    if (size < kBase) return TDM_OK;  // the store refuses it, with its own words
    out->struct_size = std::min<uint32_t>(size, uint32_t(sizeof *out));
    // names->at(0): the name; then one per part ("" for a null part, which stays null)
    const char* plugin_name_ptr = out->name;
    if (plugin_name_ptr) {
        std::string n;
        if (tdm_status st = read_name(plugin_name_ptr, "load_weight", &n); st != TDM_OK) return st;
        names->push_back(std::move(n));
    }
    const bool has_parts = size >= kBase + sizeof out->parts && out->parts && out->n_parts > 0;
    std::vector<bool> null_part;
    if (has_parts) {
        if (out->n_parts > 64)
            return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                                  fmt::format("load_weight: {} parts is implausible", out->n_parts));
        for (uint32_t i = 0; i < out->n_parts; ++i) {
            std::string n;
            null_part.push_back(!out->parts[i]);
            if (out->parts[i])
                if (tdm_status st = read_name(out->parts[i], "load_weight part", &n); st != TDM_OK) return st;
            names->push_back(std::move(n));
        }
    }
    // no reallocation from here on: the pointers taken below stay valid
    size_t next = 0;
    if (plugin_name_ptr) out->name = (*names)[next++].c_str();
    if (has_parts) {
        for (uint32_t i = 0; i < out->n_parts; ++i, ++next)
            parts->push_back(null_part[i] ? nullptr : (*names)[next].c_str());
        out->parts = parts->data();
    }
    return TDM_OK;
}

}  // namespace

tdm_status load_plugin_weight(tdm_loader* loader, const tdm_weight_request* plugin_req, const tdm_weight** out,
                              const StoreLoad& load) {
    if (!loader || !plugin_req || !out) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "load_weight: null argument");
    // The store reads the request's tensor names: hand it bounded copies.
    tdm_weight_request req_copy;
    std::vector<std::string> names;
    std::vector<const char*> parts;
    if (tdm_status st = bounded_weight_request(plugin_req, &req_copy, &names, &parts); st != TDM_OK) return st;
    auto r = load(*loader->store, *loader->src, req_copy);
    if (!r.ok()) {
        const Error& e = r.error();
        const std::string& m = e.message();
        const tdm_status st = e.code()                                              ? tdm_status(e.code())
                              : m.find("missing tensor") != std::string::npos       ? TDM_ERR_NOT_FOUND
                              : m.find("shape") != std::string::npos                ? TDM_ERR_SHAPE
                              : m.find("does not support") != std::string::npos     ? TDM_ERR_UNSUPPORTED
                              : m.find("out of device memory") != std::string::npos ? TDM_ERR_OUT_OF_MEMORY
                                                                                    : TDM_ERR_BAD_MODEL;
        return set_last_error(st, m);
    }
    *out = to_handle(*r);
    return TDM_OK;
}

namespace {

tdm_status api_load_weight(tdm_loader* loader, const tdm_weight_request* req, const tdm_weight** out) {
    return load_plugin_weight(loader, req, out, [](WeightStore& s, const ModelSource& src, const tdm_weight_request& r) {
        return s.load(src, r);
    });
}

tdm_status api_load_token_table(tdm_loader* loader, const tdm_weight_request* req, const tdm_weight** out) {
    return load_plugin_weight(loader, req, out, [](WeightStore& s, const ModelSource& src, const tdm_weight_request& r) {
        return s.load_token_table(src, r);
    });
}


tdm_status api_target_weight(tdm_loader* loader, const char* plugin_name, const tdm_weight** out) {
    if (!loader || !plugin_name || !out)
        return set_last_error(TDM_ERR_INVALID_ARGUMENT, "tdm.target_weights get: null argument");
    *out = nullptr;
    std::string name;
    if (tdm_status st = read_name(plugin_name, "tdm.target_weights get", &name); st != TDM_OK) return st;
    if (!loader->target)
        return set_last_error(TDM_ERR_NOT_FOUND,
                              "tdm.target_weights get: only a draft head's load callback has a target");
    const DeviceWeight* w = loader->target->find(name);
    if (!w)
        return set_last_error(TDM_ERR_NOT_FOUND,
                              fmt::format("tdm.target_weights get: the target loaded no weight '{}'", name));
    *out = to_handle(w);
    return TDM_OK;
}

const tdm_ext_target_weights kTargetWeightsExt = {sizeof(tdm_ext_target_weights), api_target_weight};

tdm_status api_weight_shape(const tdm_weight* w, tdm_tensor_shape* out) {
    if (!w || !out) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "weight_shape: null argument");
    const DeviceWeight* d = from_handle(w);
    tdm_tensor_shape shape{};
    shape.struct_size = sizeof shape;
    shape.type = tdm_dtype(d->type());
    for (int i = 0; i < 4; ++i) shape.ne[i] = d->ne()[i];
    return write_out(out, shape, "weight_shape: tdm_tensor_shape");
}

// ---- graphs ----------------------------------------------------------------------------

tdm_status bad_graph() { return set_last_error(TDM_ERR_INVALID_ARGUMENT, "null graph or argument"); }

bool valid_tensor(const tdm_graph* g, tdm_tensor t) { return t.id != 0 && t.id < g->graph.tensor_count(); }

// Reads a plugin's tdm_op_desc append-safely: at least the ABI 1 size, fields
// past its struct_size read as zero (a v1 plugin's desc has custom = NULL).
tdm_status read_op_desc(const tdm_op_desc* in, const char* caller, tdm_op_desc* out) {
    auto r = read_abi_struct(in, 1, fmt::format("{}: tdm_op_desc", caller));
    if (!r.ok()) return set_last_error(r.error());
    *out = *r;
    return TDM_OK;
}

tdm_status api_graph_op(tdm_graph* g, const tdm_op_desc* plugin_desc, tdm_tensor* out) {
    if (!g || !plugin_desc || !out) return bad_graph();
    tdm_op_desc copy;
    if (tdm_status st = read_op_desc(plugin_desc, "graph_op", &copy); st != TDM_OK) return st;
    const tdm_op_desc* d = &copy;
    if (d->n_inputs > 8) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "graph_op: more than 8 inputs");
    // host-internal codes and ops of a later minor than the plugin's too
    if (auto st = op_offered(d->op, g->plugin_abi, g->plugin_abi_minor); !st.ok()) return set_last_error(st.error());
    OpDesc o;
    o.op = tdm_op(d->op);
    o.n_in = int(d->n_inputs);
    for (uint32_t k = 0; k < d->n_inputs; ++k) {
        if (!valid_tensor(g, d->inputs[k]))
            return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                                  fmt::format("{}: input {} is not a tensor of this graph", op_name(o.op), k));
        o.in[k] = d->inputs[k].id;
    }
    // a draft head reads the target's KV; it must never write it (tandem.h §6)
    if (o.op == TDM_OP_KV_STORE && d->n_inputs > 0) {
        const Tensor& kv = g->graph.tensor(o.in[0]);
        for (const KvLayerBinding* t : g->target_kv)
            if (t && kv.kv == t)
                return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                                      "kv_store: the target's KV layers are read-only for a draft head");
    }
    std::memcpy(o.i, d->i, sizeof o.i);
    std::memcpy(o.f, d->f, sizeof o.f);
    if (d->name) o.name = plugin_string(d->name, kPluginNameMax);
    o.custom = from_handle(d->custom);
    auto r = g->graph.op(o);
    if (!r.ok()) {
        const Error& e = r.error();
        // ABI 1 reported every refusal of an op as TDM_ERR_SHAPE, and its plugins
        // know no TDM_ERR_TYPE or TDM_ERR_LIMIT: they keep getting what they knew.
        if (g->plugin_abi < 2) return set_last_error(TDM_ERR_SHAPE, e.message());
        return set_last_error(e);
    }
    out->id = *r;
    return TDM_OK;
}

tdm_status api_graph_op_output(tdm_graph* g, tdm_tensor t, uint32_t index, tdm_tensor* out) {
    if (!g || !out || !valid_tensor(g, t)) return bad_graph();
    if (index == 0) {
        *out = t;
        return TDM_OK;
    }
    const TensorId second = index == 1 ? g->graph.second_output(t.id) : kNoTensor;
    if (!second) return set_last_error(TDM_ERR_NOT_FOUND, fmt::format("tensor has no output {}", index));
    out->id = second;
    return TDM_OK;
}

tdm_status host_table_refused(const DeviceWeight* w) {
    return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                          fmt::format("{} lives in host memory (tdm.host_rows): only token_rows reads it", w->name()));
}

tdm_status api_graph_weight(tdm_graph* g, const tdm_weight* w, tdm_tensor* out) {
    if (!g || !w || !out) return bad_graph();
    if (from_handle(w)->in_host_memory()) return host_table_refused(from_handle(w));
    out->id = g->graph.weight(from_handle(w));
    return TDM_OK;
}

tdm_status api_graph_weight_rows(tdm_graph* g, const tdm_weight* w, uint64_t n_rows, tdm_tensor* out) {
    if (!g || !w || !out) return bad_graph();
    if (from_handle(w)->in_host_memory()) return host_table_refused(from_handle(w));
    auto v = DeviceWeight::prefix(*from_handle(w), int64_t(n_rows));
    if (!v.ok()) return set_last_error(TDM_ERR_INVALID_ARGUMENT, v.error().message());
    out->id = g->graph.owned_weight(std::shared_ptr<const DeviceWeight>(std::move(v).value()));
    return TDM_OK;
}

tdm_status api_token_rows(tdm_graph* g, const tdm_weight* table, const char* name, tdm_tensor* out) {
    if (!g || !table || !out) return bad_graph();
    const DeviceWeight* w = from_handle(table);
    if (w->ne()[2] != 1 || w->ne()[3] != 1)
        return set_last_error(TDM_ERR_SHAPE, fmt::format("token_rows: {} is not a 2-D table", w->name()));
    const std::string label = name ? plugin_string(name, kPluginNameMax) : w->name();
    if (!w->in_host_memory()) {
        OpDesc o;
        o.op = TDM_OP_GET_ROWS;
        o.in[0] = g->graph.weight(w);
        o.in[1] = g->tokens;
        o.n_in = 2;
        o.name = label;
        auto r = g->graph.op(o);
        if (!r.ok()) return set_last_error(r.error());
        out->id = *r;
        return TDM_OK;
    }
    // the host fills this input with the rows of the batch's tokens before each run
    out->id = g->graph.input(DType::F32, {w->cols(), int64_t(g->batch.n_tokens)}, label);
    g->host_rows.push_back({out->id, w});
    return TDM_OK;
}

int api_table_in_host_memory(const tdm_weight* table) { return table && from_handle(table)->in_host_memory() ? 1 : 0; }

const tdm_ext_host_rows kHostRowsExt = {sizeof(tdm_ext_host_rows), api_load_token_table, api_token_rows,
                                        api_table_in_host_memory};

tdm_status api_graph_input(tdm_graph* g, tdm_graph_input which, tdm_tensor* out) {
    if (!g || !out) return bad_graph();
    const int64_t n = g->batch.n_tokens;
    switch (which) {
        case TDM_INPUT_TOKENS: out->id = g->tokens; return TDM_OK;
        case TDM_INPUT_POSITIONS: out->id = g->positions; return TDM_OK;
        case TDM_INPUT_OUTPUT_ROWS: out->id = g->output_rows; return TDM_OK;
        case TDM_INPUT_POSITIONS_4:
            if (!g->positions4) g->positions4 = g->graph.input(DType::I32, {4, n}, "positions4");
            out->id = g->positions4;
            return TDM_OK;
        case TDM_INPUT_TARGET_HIDDEN:
            if (g->n_embd_target == 0)
                return set_last_error(TDM_ERR_INVALID_ARGUMENT, "TDM_INPUT_TARGET_HIDDEN exists only in draft-head graphs");
            if (!g->target_hidden)
                g->target_hidden = g->graph.input(DType::F32, {g->n_embd_target, n}, "target_hidden");
            out->id = g->target_hidden;
            return TDM_OK;
        default: break;
    }
    return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("unknown graph input {}", int(which)));
}

tdm_status api_graph_kv(tdm_graph* g, uint32_t layer, tdm_tensor* out) {
    if (!g || !out) return bad_graph();
    if (layer >= g->kv.size())
        return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                              fmt::format("KV layer {} does not exist (the model declared {})", layer, g->kv.size()));
    out->id = g->graph.kv(g->kv[layer]);
    return TDM_OK;
}

tdm_status api_graph_target_kv(tdm_graph* g, uint32_t layer, tdm_tensor* out) {
    if (!g || !out) return bad_graph();
    if (layer >= g->target_kv.size() || !g->target_kv[layer])
        return set_last_error(TDM_ERR_INVALID_ARGUMENT,
                              fmt::format("target KV layer {} was not declared by this draft head", layer));
    out->id = g->graph.kv(g->target_kv[layer]);
    return TDM_OK;
}

tdm_status api_graph_set_output(tdm_graph* g, tdm_graph_output which, tdm_tensor t) {
    if (!g || !valid_tensor(g, t)) return bad_graph();
    const int last = g->plugin_abi >= 3 ? TDM_OUTPUT_DRAFT_TOKENS : TDM_OUTPUT_HIDDEN_DRAFT;
    if (int(which) < 0 || int(which) > last)
        return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("unknown graph output {}", int(which)));
    if (which == TDM_OUTPUT_DRAFT_TOKENS && g->graph.tensor(t.id).type != DType::I32)
        return set_last_error(TDM_ERR_TYPE, "TDM_OUTPUT_DRAFT_TOKENS must be i32 token ids");
    g->outputs[which] = t.id;
    return TDM_OK;
}

tdm_status api_graph_tensor_shape(tdm_graph* g, tdm_tensor t, tdm_tensor_shape* out) {
    if (!g || !out || !valid_tensor(g, t)) return bad_graph();
    const Tensor& x = g->graph.tensor(t.id);
    tdm_tensor_shape shape{};
    shape.struct_size = sizeof shape;
    shape.type = tdm_dtype(x.type);
    for (int i = 0; i < 4; ++i) shape.ne[i] = x.ne[i];
    return write_out(out, shape, "graph_tensor_shape: tdm_tensor_shape");
}

tdm_status api_graph_state(tdm_graph* g, uint32_t index, tdm_tensor* out) {
    if (!g || !out) return bad_graph();
    if (index >= g->states.size())
        return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("recurrent state {} does not exist (the model "
                                                                    "declared {})",
                                                                    index, g->states.size()));
    out->id = g->graph.state(g->states[index]);
    return TDM_OK;
}

// ---- options ---------------------------------------------------------------------------

tdm_status api_option_get_string(const tdm_options* o, const char* plugin_key, const char** out) {
    if (!plugin_key || !out) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "option: null argument");
    std::string key;
    if (tdm_status st = read_name(plugin_key, "option", &key); st != TDM_OK) return st;
    if (!o) return set_last_error(TDM_ERR_NOT_FOUND, fmt::format("no option '{}'", key));
    auto it = o->values.find(key);
    if (it == o->values.end()) return set_last_error(TDM_ERR_NOT_FOUND, fmt::format("no option '{}'", key));
    *out = it->second.c_str();
    return TDM_OK;
}

tdm_status api_option_get_int(const tdm_options* o, const char* key, int64_t* out) {
    const char* s = nullptr;
    if (tdm_status st = api_option_get_string(o, key, &s); st != TDM_OK) return st;
    char* end = nullptr;
    const long long v = std::strtoll(s, &end, 10);
    if (!*s || *end) return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("option '{}': '{}' is not an integer", key, s));
    *out = v;
    return TDM_OK;
}

tdm_status api_option_get_float(const tdm_options* o, const char* key, double* out) {
    const char* s = nullptr;
    if (tdm_status st = api_option_get_string(o, key, &s); st != TDM_OK) return st;
    char* end = nullptr;
    const double v = std::strtod(s, &end);
    if (!*s || *end) return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("option '{}': '{}' is not a number", key, s));
    *out = v;
    return TDM_OK;
}

// ---- misc ------------------------------------------------------------------------------

void api_log(tdm_log_level level, const char* plugin, const char* message) {
    const LogLevel l = level <= TDM_LOG_DEBUG ? LogLevel::debug
                       : level == TDM_LOG_INFO ? LogLevel::info
                       : level == TDM_LOG_WARN ? LogLevel::warn
                                               : LogLevel::error;
    log_message(l, fmt::format("plugin {}", plugin_string(plugin, kPluginNameMax, "?")),
                plugin_string(message, kPluginTextMax));
}

const char* api_last_error() { return t_last_error.c_str(); }

tdm_status api_register_arch(tdm_registry* reg, const tdm_arch_desc* d) {
    if (!reg) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "register_arch outside init");
    auto st = reg->registry->add_arch(reg->plugin, d);
    if (!st.ok()) return set_last_error(st.error());
    reg->plugin->provides.push_back(fmt::format("architecture {}", plugin_string(d->name, kPluginNameMax)));
    return TDM_OK;
}

tdm_status api_register_draft_head(tdm_registry* reg, const tdm_draft_head_desc* d) {
    if (!reg) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "register_draft_head outside init");
    auto st = reg->registry->add_draft_head(reg->plugin, d);
    if (!st.ok()) return set_last_error(st.error());
    reg->plugin->provides.push_back(fmt::format("draft head {}", plugin_string(d->name, kPluginNameMax)));
    return TDM_OK;
}

tdm_status api_register_drafter(tdm_registry* reg, const tdm_drafter_desc* d) {
    if (!reg) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "register_drafter outside init");
    auto st = reg->registry->add_drafter(reg->plugin, d);
    if (!st.ok()) return set_last_error(st.error());
    reg->plugin->provides.push_back(fmt::format("drafter {}", plugin_string(d->name, kPluginNameMax)));
    return TDM_OK;
}

// ---- [v2] capability queries: thin wrappers over plugin/capabilities.h -----------------

// One per table: ABI `Abi`.`Minor` plugins are not offered ops of a later minor.
template <uint32_t Abi, uint32_t Minor>
tdm_status api_query_op(const tdm_op_desc* desc) {
    if (!desc) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "query_op: null descriptor");
    tdm_op_desc d;
    if (tdm_status st = read_op_desc(desc, "query_op", &d); st != TDM_OK) return st;
    if (auto st = op_offered(d.op, Abi, Minor); !st.ok()) return set_last_error(st.error());
    return query_op_params(d);
}

tdm_status api_get_limits(tdm_host_limits* out) {
    if (!out) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "get_limits: null argument");
    return host_limits(out);
}

const void* api_get_extension(const char* name, uint32_t min_version, uint32_t* version) {
    if (!name) {
        set_last_error(TDM_ERR_INVALID_ARGUMENT, "get_extension: null name");
        return nullptr;
    }
    std::string n;
    if (read_name(name, "get_extension", &n) != TDM_OK) return nullptr;
    return find_extension(n, min_version, version);
}

const tdm_host_api kHostApi = {
    sizeof(tdm_host_api),
    TDM_ABI_VERSION,
    TANDEM_VERSION,
    api_log,
    api_last_error,
    api_register_arch,
    api_register_draft_head,
    api_register_drafter,
    api_source_format,
    api_source_path,
    api_meta_has,
    api_meta_get_int,
    api_meta_get_float,
    api_meta_get_bool,
    api_meta_get_string,
    api_meta_get_int_array,
    api_meta_get_float_array,
    api_tensor_info,
    api_load_weight,
    api_weight_shape,
    api_graph_op,
    api_graph_op_output,
    api_graph_weight,
    api_graph_input,
    api_graph_kv,
    api_graph_target_kv,
    api_graph_set_output,
    api_graph_tensor_shape,
    api_option_get_int,
    api_option_get_float,
    api_option_get_string,
    api_graph_state,
    api_graph_weight_rows,
    api_query_op<TDM_ABI_VERSION, TDM_ABI_MINOR_VERSION>,
    query_weight_type,
    api_get_limits,
    api_get_extension,
    TDM_ABI_MINOR_VERSION,
};

}  // namespace

// kHostApi is the table of the newest minor; each older minor of ABI 3 has one below.
static_assert(TDM_ABI_MINOR_VERSION == 1, "a new minor: add the table of the one before it");

const tdm_host_api* host_api(uint32_t abi, uint32_t minor) {
    // ABI 1 plugins get the table as ABI 1 had it: its size, its version, and
    // nothing past it (a 1..2 plugin that negotiated 1 must not see v2 entries).
    static const tdm_host_api kHostApiV1 = [] {
        tdm_host_api t{};
        std::memcpy(&t, &kHostApi, TDM_V1_SIZEOF_HOST_API);
        t.struct_size = TDM_V1_SIZEOF_HOST_API;
        t.abi_version = 1;
        return t;
    }();
    // ABI 2 plugins: the same entries (ABI 3 added none), their version number and
    // no minor (abi_minor is past the end of their header's table)
    static const tdm_host_api kHostApiV2 = [] {
        tdm_host_api t = kHostApi;
        t.abi_version = 2;
        t.abi_minor = 0;
        t.query_op = api_query_op<2, 0>;
        return t;
    }();
    // ABI 3.0 plugins: minor 0, and query_op offers them no op of a later minor
    static const tdm_host_api kHostApiV3_0 = [] {
        tdm_host_api t = kHostApiV2;
        t.abi_version = 3;
        t.query_op = api_query_op<3, 0>;
        return t;
    }();
    if (abi >= 3) return minor >= 1 ? &kHostApi : &kHostApiV3_0;
    return abi == 2 ? &kHostApiV2 : &kHostApiV1;
}

const tdm_host_api* host_api(const PluginRecord& plugin) { return host_api(plugin.abi, plugin.abi_minor); }

const tdm_ext_target_weights* target_weights_extension() { return &kTargetWeightsExt; }
const tdm_ext_host_rows* host_rows_extension() { return &kHostRowsExt; }

tdm_status set_last_error(const Error& e) {
    return set_last_error(e.code() ? tdm_status(e.code()) : TDM_ERR_INVALID_ARGUMENT, e.message());
}

tdm_status set_last_error(tdm_status st, std::string message) {
    t_last_error = std::move(message);
    return st;
}

void init_graph_inputs(tdm_graph& g, const tdm_batch_desc& batch, bool has_states) {
    g.batch = batch;
    const int64_t n = batch.n_tokens;
    g.tokens = g.graph.input(DType::I32, {n}, "tokens");
    g.positions = g.graph.input(DType::I32, {n}, "positions");
    g.seq_ids = g.graph.input(DType::I32, {n}, "seq_ids");
    g.output_rows = g.graph.input(DType::I32, {int64_t(batch.n_outputs)}, "output_rows");
    g.graph.set_batch(g.positions, g.seq_ids);
    if (has_states) {
        g.state_io = g.graph.input(DType::I32, {state_io_entries(n)}, "state_io");
        g.graph.set_state_io(g.state_io);
    }
}

}  // namespace tdm
