// SPDX-License-Identifier: MIT
// tandem/cpp/host.hpp: the host's function table as a C++ object that knows
// which entries this host has (Host), the ops and parameters a plugin checks
// during init (OpQuery, require_ops), extensions (require_extension) and
// registration with messages that name what failed.
//
// A tdm_host_api is append-only (tandem.h section 1 and 4): a host of an older
// ABI hands a shorter table, and a host may leave an entry it does not offer
// NULL. Host copies the table the way section 1 says (min(struct_size,
// sizeof) bytes into a zeroed local), so every entry past the host's table
// reads as NULL and has_*() is a NULL test. Call v2 entries only through
// Host, or after TDM_HAS_MEMBER and a NULL test of your own.
//
// Header-only, C++17, no allocation, no exceptions.
#ifndef TANDEM_CPP_HOST_HPP
#define TANDEM_CPP_HOST_HPP

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "../ops.h"
#include "../tandem.h"
#include "status.hpp"
#include "structs.hpp"

namespace tdm::sdk {

// The name of an op in messages ("rope"), as ops.h spells it in lower case
// (from tandem/op_list.h).
constexpr const char* op_name(std::uint32_t op) noexcept {
    switch (op) {
    case TDM_OP_NONE: return "none";
#define TDM_SDK_OP_NAME_(code, NAME, name, abi, minor) \
    case code:                                         \
        return name;
    TDM_OP_LIST(TDM_SDK_OP_NAME_)
#undef TDM_SDK_OP_NAME_
    default: return "unknown op";
    }
}

// One op with the parameters a plugin will pass it, to ask the host whether it
// implements them (tdm_host_api.query_op). `param` says in words what the
// parameters select, for the refusal message: "NeoX, interleaved M-RoPE
// sections". constexpr, so a plugin keeps its list in a static table:
//
//     constexpr OpQuery kOps[] = {
//         OpQuery(TDM_OP_MATMUL),
//         OpQuery(TDM_OP_GLU, "SwiGLU").param_i(0, TDM_GLU_SWIGLU),
//     };
class OpQuery {
public:
    constexpr explicit OpQuery(tdm_op op, const char* param = nullptr) noexcept : op_(op), param_(param) {}

    // Integer parameter i[k] (k < 16) / float parameter f[k] (k < 8); an index
    // out of range is ignored.
    constexpr OpQuery param_i(int k, std::int32_t v) const noexcept {
        OpQuery c = *this;
        if (k >= 0 && k < 16) c.i_[k] = v;
        return c;
    }
    constexpr OpQuery param_f(int k, float v) const noexcept {
        OpQuery c = *this;
        if (k >= 0 && k < 8) c.f_[k] = v;
        return c;
    }

    constexpr tdm_op op() const noexcept { return op_; }
    constexpr const char* param() const noexcept { return param_; }
    // The descriptor query_op takes: no inputs, these parameters.
    tdm_op_desc desc() const noexcept {
        tdm_op_desc d;
        std::memset(&d, 0, sizeof d);
        d.struct_size = sizeof d;
        d.op = std::uint32_t(op_);
        for (int k = 0; k < 16; ++k) d.i[k] = i_[k];
        for (int k = 0; k < 8; ++k) d.f[k] = f_[k];
        return d;
    }

private:
    tdm_op op_;
    const char* param_;
    std::int32_t i_[16] = {};
    float f_[8] = {};
};

class Host {
public:
    Host() noexcept { std::memset(&table_, 0, sizeof table_); }

    // Takes the host table init() received. Fails with TDM_ERR_ABI_MISMATCH
    // when it is null or shorter than ABI 1's table (TDM_V1_SIZEOF_HOST_API):
    // a larger-or-equal table is fine whatever this header's sizeof is.
    // `plugin` names the plugin in log lines and messages (static storage).
    tdm_status init(const tdm_host_api* api, const char* plugin, Err err) noexcept {
        plugin_ = plugin ? plugin : "plugin";
        raw_ = nullptr;
        if (!read_struct(api, TDM_V1_SIZEOF_HOST_API, &table_))
            return err.fail(TDM_ERR_ABI_MISMATCH,
                            "%s: the host's function table is %u bytes, less than the %u bytes of ABI 1's: not a "
                            "tandem host this plugin can use",
                            plugin_, api ? unsigned(api->struct_size) : 0u, unsigned(TDM_V1_SIZEOF_HOST_API));
        raw_ = api;
        return TDM_OK;
    }

    bool valid() const noexcept { return raw_ != nullptr; }
    // The host's own table (pass it to graph.h's tdm_builder_init and to v1
    // entries); valid until the plugin's shutdown().
    const tdm_host_api* raw() const noexcept { return raw_; }
    // The copy: entries past the host's struct_size are NULL.
    const tdm_host_api& table() const noexcept { return table_; }
    const char* plugin() const noexcept { return plugin_; }
    std::uint32_t abi_version() const noexcept { return table_.abi_version; }
    const char* host_version() const noexcept { return table_.host_version ? table_.host_version : "?"; }

    // [v2] entries: true when the host's table reaches them and fills them.
    bool has_query_op() const noexcept { return table_.query_op != nullptr; }
    bool has_query_weight_type() const noexcept { return table_.query_weight_type != nullptr; }
    bool has_get_limits() const noexcept { return table_.get_limits != nullptr; }
    bool has_get_extension() const noexcept { return table_.get_extension != nullptr; }

    // The host's message for the last failed call on this thread ("" if none).
    const char* last_error() const noexcept {
        const char* m = table_.last_error ? table_.last_error() : nullptr;
        return m ? m : "";
    }

    // Logs a printf-style line under the plugin's name (dropped when the host
    // has no log entry or the plugin has no host yet).
    void log(tdm_log_level level, const char* fmt, ...) const noexcept TDM_SDK_PRINTF(3, 4) {
        if (!table_.log) return;
        char line[1024];
        std::va_list ap;
        va_start(ap, fmt);
        vformat_message(line, sizeof line, fmt, ap);
        va_end(ap);
        table_.log(level, plugin_, line);
    }

    // query_op, or TDM_ERR_UNSUPPORTED when the host cannot be asked
    // (has_query_op() is false); the host's reason is in last_error().
    tdm_status query_op(const OpQuery& q) const noexcept {
        if (!table_.query_op) return TDM_ERR_UNSUPPORTED;
        const tdm_op_desc d = q.desc();
        return table_.query_op(&d);
    }
    tdm_status query_weight_type(tdm_dtype type, tdm_op op) const noexcept {
        return table_.query_weight_type ? table_.query_weight_type(type, std::uint32_t(op)) : TDM_ERR_UNSUPPORTED;
    }
    // The host's limits into *out (zeroed first; fields the host does not know
    // stay zero). False when the host has no get_limits or it failed.
    bool limits(tdm_host_limits* out) const noexcept {
        std::memset(out, 0, sizeof *out);
        out->struct_size = sizeof *out;
        if (!table_.get_limits) return false;
        tdm_host_limits got;
        std::memset(&got, 0, sizeof got);
        got.struct_size = sizeof got;
        if (table_.get_limits(&got) != TDM_OK) return false;
        *out = got;
        out->struct_size = sizeof *out;
        return true;
    }
    // An extension's function table (cast it to the extension's type), or
    // NULL when the host lacks get_extension or does not offer `name` at
    // `min_version` or later.
    const void* extension(const char* name, std::uint32_t min_version,
                          std::uint32_t* version = nullptr) const noexcept {
        if (version) *version = 0;
        return table_.get_extension ? table_.get_extension(name, min_version, version) : nullptr;
    }

    // Registration [init], failing with a message that names the descriptor
    // and quotes the host.
    tdm_status register_arch(tdm_registry* reg, const tdm_arch_desc& d, Err err) const noexcept {
        const tdm_status st = table_.register_arch(reg, &d);
        return st == TDM_OK ? st : err.fail(st, "%s: registering architecture %s: %s", plugin_, d.name ? d.name : "(unnamed)", last_error());
    }
    tdm_status register_draft_head(tdm_registry* reg, const tdm_draft_head_desc& d, Err err) const noexcept {
        const tdm_status st = table_.register_draft_head(reg, &d);
        return st == TDM_OK ? st : err.fail(st, "%s: registering draft head %s: %s", plugin_, d.name ? d.name : "(unnamed)", last_error());
    }
    tdm_status register_drafter(tdm_registry* reg, const tdm_drafter_desc& d, Err err) const noexcept {
        const tdm_status st = table_.register_drafter(reg, &d);
        return st == TDM_OK ? st : err.fail(st, "%s: registering drafter %s: %s", plugin_, d.name ? d.name : "(unnamed)", last_error());
    }

private:
    tdm_host_api table_;
    const tdm_host_api* raw_ = nullptr;
    const char* plugin_ = "plugin";
};

// Asks the host about every op in ops[0, n) [init]. A host without query_op
// (a v1 host, or one that leaves the entry NULL) cannot be asked: the check is
// skipped and TDM_OK returned (graph building then reports a missing op when
// it happens). Otherwise the first op the host refuses fails the call:
//   "<plugin> needs op rope (NeoX, interleaved M-RoPE sections) that this host
//    lacks: <the host's message>"
// with the host's status (TDM_ERR_UNSUPPORTED).
inline tdm_status require_ops(const Host& host, const OpQuery* ops, std::size_t n, Err err) noexcept {
    if (!host.has_query_op()) return TDM_OK;
    for (std::size_t k = 0; k < n; ++k) {
        const tdm_status st = host.query_op(ops[k]);
        if (st == TDM_OK) continue;
        const char* why = host.last_error();
        const char* param = ops[k].param();
        if (param && *param)
            return err.fail(st, "%s needs op %s (%s) that this host lacks: %s", host.plugin(), op_name(ops[k].op()),
                            param, *why ? why : status_name(st));
        return err.fail(st, "%s needs op %s that this host lacks: %s", host.plugin(), op_name(ops[k].op()),
                        *why ? why : status_name(st));
    }
    return TDM_OK;
}
template <std::size_t N>
tdm_status require_ops(const Host& host, const OpQuery (&ops)[N], Err err) noexcept {
    return require_ops(host, ops, N, err);
}
inline tdm_status require_ops(const Host& host, std::initializer_list<OpQuery> ops, Err err) noexcept {
    return require_ops(host, ops.begin(), ops.size(), err);
}

// An extension the plugin cannot work without [init]: *out = its table, or
// TDM_ERR_UNSUPPORTED with "<plugin> needs extension <name> version <v> or
// later: <the host's message>" (also when the host has no get_extension).
inline tdm_status require_extension(const Host& host, const char* name, std::uint32_t min_version, const void** out,
                                    Err err, std::uint32_t* version = nullptr) noexcept {
    *out = host.extension(name, min_version, version);
    if (*out) return TDM_OK;
    const char* why = host.has_get_extension() ? host.last_error() : "the host has no extensions (get_extension)";
    return err.fail(TDM_ERR_UNSUPPORTED, "%s needs extension %s version %u or later: %s", host.plugin(), name,
                    unsigned(min_version), *why ? why : "not offered");
}

}  // namespace tdm::sdk

#endif  // TANDEM_CPP_HOST_HPP
