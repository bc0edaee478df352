// SPDX-License-Identifier: MIT
// tandem/cpp/weights.hpp: an architecture's weight-name table and a loader
// for its load callback.
//
// A plugin lists each tensor once, in both layouts it reads, with the
// transforms the layouts need (tandem.h tdm_weight_flags):
//
//     constexpr TensorName kAttnNorm = {"blk.%d.attn_norm.weight",
//                                       "model.layers.%d.input_layernorm.weight", TDM_WEIGHT_F32};
//     constexpr TensorName kQNorm = {"attn_q_norm.weight", "self_attn.q_norm.weight", TDM_WEIGHT_F32,
//                                    TDM_WEIGHT_ADD_ONE};  // HF stores w - 1; GGUF bakes the +1 in
//
// and loads them with the shape it expects (ggml order; 0 = any size in that
// dim); the host checks the shape and type and names the tensor on failure:
//
//     WeightLoader L(host, loader, hf, Err(err, err_size));
//     TDM_SDK_TRY(L.get(kTokEmbd, {n_embd, n_vocab}, &m->tok_embd));
//     const WeightLoader Ll = L.at_layer(il);             // %d = il
//     TDM_SDK_TRY(Ll.get(kAttnNorm, {n_embd}, &l.attn_norm));
//     TDM_SDK_TRY(Ll.request(kQkv, {n_embd, n_qkv}).row_perm(perm).load(&l.wqkv));
//
// A name is prefix + pattern; with_prefix() sets a prefix per layout (itself
// a pattern), so one table serves layers under different roots ("blk.%d." and
// "model.language_model.layers.%d.", or an MTP layer's "mtp.layers.0.").
// In prefixes and names, "%d" is the layer index and "%%" a percent sign;
// nothing else may follow a '%'.
//
// Header-only, C++17. Loading allocates nothing; NameList and part_names()
// (expert stacking) use std::string and std::vector.
#ifndef TANDEM_CPP_WEIGHTS_HPP
#define TANDEM_CPP_WEIGHTS_HPP

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "../ext/host_rows.h"
#include "../ext/weight_transforms.h"
#include "../tandem.h"
#include "status.hpp"

namespace tdm::sdk {

// One tensor in both layouts. Flags: `flags` for both, plus `hf_flags` for HF
// sources or `gguf_flags` for GGUF ones.
struct TensorName {
    const char* gguf;
    const char* hf;
    std::uint32_t flags = 0;
    std::uint32_t hf_flags = 0;
    std::uint32_t gguf_flags = 0;
};

// An expected shape, ggml order, 1 to 4 dimensions: {n_embd} or {n_embd, n_vocab}.
class Shape {
public:
    Shape(std::initializer_list<std::int64_t> ne) noexcept {
        if (ne.size() < 1 || ne.size() > 4) return;  // n_dims 0: refused by load()
        n_dims_ = std::uint32_t(ne.size());
        std::uint32_t i = 0;
        for (std::int64_t v : ne) ne_[i++] = v;
    }
    std::uint32_t n_dims() const noexcept { return n_dims_; }
    std::int64_t operator[](std::uint32_t i) const noexcept { return i < 4 ? ne_[i] : 0; }

private:
    std::uint32_t n_dims_ = 0;
    std::int64_t ne_[4] = {0, 0, 0, 0};
};

enum class NameError { ok, too_long, no_layer, bad_pattern };

// Appends `pattern` to out[*used, cap) with "%d" -> layer ("%%" -> '%').
// no_layer: the pattern has %d and layer < 0; bad_pattern: another '%'.
inline NameError append_name(char* out, std::size_t cap, std::size_t* used, const char* pattern, int layer) noexcept {
    for (const char* p = pattern ? pattern : ""; *p; ++p) {
        char digits[16];
        const char* piece = p;
        std::size_t len = 1;
        if (*p == '%') {
            if (p[1] == '%') {
                ++p;
                piece = p;
            } else if (p[1] == 'd') {
                if (layer < 0) return NameError::no_layer;
                len = std::size_t(std::snprintf(digits, sizeof digits, "%d", layer));
                piece = digits;
                ++p;
            } else {
                return NameError::bad_pattern;
            }
        }
        if (*used + len >= cap) return NameError::too_long;
        std::memcpy(out + *used, piece, len);
        *used += len;
        out[*used] = '\0';
    }
    return NameError::ok;
}

// prefix + name into out (NUL-terminated), both patterns as above.
inline NameError format_name(char* out, std::size_t cap, const char* prefix, const char* name, int layer) noexcept {
    if (!cap) return NameError::too_long;
    std::size_t used = 0;
    out[0] = '\0';
    const NameError e = append_name(out, cap, &used, prefix, layer);
    return e != NameError::ok ? e : append_name(out, cap, &used, name, layer);
}

// Owned tensor names for a stacked weight (tdm_weight_request.parts).
class NameList {
public:
    void add(std::string name) {
        names_.push_back(std::move(name));
        ptrs_.clear();
    }
    std::uint32_t size() const noexcept { return std::uint32_t(names_.size()); }
    const std::string& operator[](std::size_t i) const noexcept { return names_[i]; }
    // Valid until the next add().
    const char* const* data() {
        if (ptrs_.size() != names_.size()) {
            ptrs_.clear();
            for (const std::string& n : names_) ptrs_.push_back(n.c_str());
        }
        return ptrs_.data();
    }

private:
    std::vector<std::string> names_;
    std::vector<const char*> ptrs_;
};

// One weight to load: made by WeightLoader::request(), adjusted, then load()ed.
// It carries what it needs to load itself; arrays it points to (permutations,
// parts) must live until load() returns.
class WeightRequest {
public:
    static constexpr std::size_t kMaxNameBytes = 256;

    WeightRequest& flags(std::uint32_t f) noexcept {
        r_.flags |= f;
        return *this;
    }
    WeightRequest& optional() noexcept { return flags(TDM_WEIGHT_OPTIONAL); }
    // Output row r = source row perm[r] (n = the row count): head reordering.
    WeightRequest& row_perm(const std::int64_t* perm, std::uint64_t n) noexcept {
        r_.row_perm = n ? perm : nullptr;
        r_.n_row_perm = perm ? n : 0;
        return *this;
    }
    WeightRequest& row_perm(const std::vector<std::int64_t>& perm) noexcept {
        return row_perm(perm.data(), perm.size());
    }
    // Output column c = source column perm[c] (unquantized sources only).
    WeightRequest& col_perm(const std::int64_t* perm, std::uint64_t n) noexcept {
        r_.col_perm = n ? perm : nullptr;
        r_.n_col_perm = perm ? n : 0;
        return *this;
    }
    WeightRequest& col_perm(const std::vector<std::int64_t>& perm) noexcept {
        return col_perm(perm.data(), perm.size());
    }
    // The weight is these tensors, each of the requested shape, stacked along a
    // new outer dimension (MoE experts stored one tensor per expert); the
    // request's own name then only names the weight in messages.
    WeightRequest& stack(const char* const* parts, std::uint32_t n) noexcept {
        r_.parts = n ? parts : nullptr;
        r_.n_parts = parts ? n : 0;
        return *this;
    }
    WeightRequest& stack(NameList& parts) { return stack(parts.data(), parts.size()); }
    // Keeps rows [first, first + rows) of every matrix (fused gate_up splits).
    WeightRequest& slab(std::int64_t first, std::int64_t rows) noexcept {
        r_.slab_row_first = first;
        r_.slab_rows = rows;
        return *this;
    }

    const char* name() const noexcept { return name_; }
    std::uint32_t flag_bits() const noexcept { return r_.flags; }
    // The request as the host reads it (name pointing into this object).
    tdm_weight_request raw() const noexcept {
        tdm_weight_request r = r_;
        r.name = name_;
        return r;
    }

    // Loads the weight. On failure the message is the host's (it names the
    // tensor, what was expected and what was found) and the status the
    // host's; a malformed name pattern or shape (a plugin bug) is
    // TDM_ERR_INVALID_ARGUMENT. An optional tensor the source lacks: *out =
    // NULL and TDM_OK.
    tdm_status load(const tdm_weight** out) const noexcept { return load_via(host_->load_weight, out); }
    // Loads a 2-D table read only by token rows through extension tdm.host_rows,
    // which lets the host keep it in host memory; without the extension (NULL),
    // a plain load().
    tdm_status load_token_table(const tdm_ext_host_rows* ext, const tdm_weight** out) const noexcept {
        return load_via(ext ? ext->load : host_->load_weight, out);
    }
    // Loads a vector through extension tdm.weight_transforms with `transforms`
    // (tdm_weight_transform bits) applied by the host. `ext` must be the host's
    // table: a host without the extension would not apply them, so the caller
    // keeps its own path for NULL (TDM_ERR_INVALID_ARGUMENT here).
    tdm_status load_transformed(const tdm_ext_weight_transforms* ext, std::uint32_t transforms,
                                const tdm_weight** out) const noexcept {
        if (!ext) {
            *out = nullptr;
            return err_.fail(TDM_ERR_INVALID_ARGUMENT, "weight %s: transforms asked of a host without %s", name_,
                             TDM_EXT_WEIGHT_TRANSFORMS);
        }
        return load_via(
            [ext, transforms](tdm_loader* l, const tdm_weight_request* r, const tdm_weight** o) {
                return ext->load(l, r, transforms, o);
            },
            out);
    }

private:
    template <class Load>
    tdm_status load_via(Load fn, const tdm_weight** out) const noexcept {
        *out = nullptr;
        switch (name_error_) {
        case NameError::ok: break;
        case NameError::too_long:
            return err_.fail(TDM_ERR_INVALID_ARGUMENT, "weight name '%s%s' is longer than %zu bytes", prefix_,
                             pattern_, kMaxNameBytes - 1);
        case NameError::no_layer:
            return err_.fail(TDM_ERR_INVALID_ARGUMENT, "weight name '%s%s' needs a layer index (use at_layer())",
                             prefix_, pattern_);
        case NameError::bad_pattern:
            return err_.fail(TDM_ERR_INVALID_ARGUMENT,
                             "weight name '%s%s': only %%d (the layer) and %%%% may follow a '%%'", prefix_, pattern_);
        }
        if (r_.n_dims == 0)
            return err_.fail(TDM_ERR_INVALID_ARGUMENT, "weight %s: the expected shape needs 1 to 4 dimensions", name_);
        const tdm_weight_request r = raw();
        const tdm_status st = fn(loader_, &r, out);
        if (st == TDM_OK) return st;
        *out = nullptr;
        const char* why = host_->last_error ? host_->last_error() : nullptr;
        return err_.fail(st, "%s", why && *why ? why : name_);
    }

    friend class WeightLoader;
    WeightRequest(const tdm_host_api* host, tdm_loader* loader, Err err) noexcept
        : host_(host), loader_(loader), err_(err) {
        std::memset(&r_, 0, sizeof r_);
        r_.struct_size = sizeof r_;
        name_[0] = '\0';
    }

    const tdm_host_api* host_;
    tdm_loader* loader_;
    Err err_;
    tdm_weight_request r_;
    char name_[kMaxNameBytes];
    NameError name_error_ = NameError::ok;
    const char* prefix_ = "";   // for messages about a bad pattern
    const char* pattern_ = "";
};

class WeightLoader {
public:
    // `hf`: the source is an HF directory (picks the hf spellings and flags).
    WeightLoader(const tdm_host_api* host, tdm_loader* loader, bool hf, Err err) noexcept
        : host_(host), loader_(loader), hf_(hf), err_(err) {}

    bool hf() const noexcept { return hf_; }
    Err err() const noexcept { return err_; }
    int layer() const noexcept { return layer_; }

    // The same loader with %d = il in names and prefixes.
    WeightLoader at_layer(int il) const noexcept {
        WeightLoader l = *this;
        l.layer_ = il;
        return l;
    }
    // The same loader with a prefix per layout (patterns; static storage).
    WeightLoader with_prefix(const char* gguf, const char* hf) const noexcept {
        WeightLoader l = *this;
        l.prefix_gguf_ = gguf ? gguf : "";
        l.prefix_hf_ = hf ? hf : "";
        return l;
    }
    const char* prefix() const noexcept { return hf_ ? prefix_hf_ : prefix_gguf_; }

    // A request for `name` in this loader's layout, prefix and layer.
    WeightRequest request(const TensorName& name, Shape shape) const noexcept {
        WeightRequest q = request(hf_ ? name.hf : name.gguf, shape);
        q.r_.flags |= name.flags | (hf_ ? name.hf_flags : name.gguf_flags);
        return q;
    }
    // The same for one name used by both layouts (a pattern too).
    WeightRequest request(const char* name, Shape shape) const noexcept {
        WeightRequest q(host_, loader_, err_);
        q.prefix_ = prefix();
        q.pattern_ = name ? name : "";
        q.name_error_ = format_name(q.name_, sizeof q.name_, q.prefix_, q.pattern_, layer_);
        q.r_.n_dims = shape.n_dims();
        for (std::uint32_t i = 0; i < shape.n_dims(); ++i) q.r_.ne[i] = shape[i];
        return q;
    }

    tdm_status get(const TensorName& name, Shape shape, const tdm_weight** out) const noexcept {
        return request(name, shape).load(out);
    }
    // An optional tensor: *out = NULL when the source lacks it.
    tdm_status get_optional(const TensorName& name, Shape shape, const tdm_weight** out) const noexcept {
        return request(name, shape).optional().load(out);
    }

    // prefix + pattern (%d = index) for index in [0, count): the names of a
    // stacked weight's parts ("mlp.experts.%d.gate_proj.weight"); the prefix is
    // formatted with this loader's layer.
    tdm_status part_names(const char* pattern, std::uint32_t count, NameList* out) const {
        char base[WeightRequest::kMaxNameBytes], part[WeightRequest::kMaxNameBytes];
        if (format_name(base, sizeof base, prefix(), "", layer_) != NameError::ok)
            return err_.fail(TDM_ERR_INVALID_ARGUMENT, "weight name prefix '%s' is malformed or too long", prefix());
        for (std::uint32_t i = 0; i < count; ++i) {
            if (format_name(part, sizeof part, "", pattern, int(i)) != NameError::ok)
                return err_.fail(TDM_ERR_INVALID_ARGUMENT, "weight name pattern '%s%s' is malformed or too long", base,
                                 pattern ? pattern : "");
            std::string n = base;
            n += part;
            if (n.size() >= WeightRequest::kMaxNameBytes)
                return err_.fail(TDM_ERR_INVALID_ARGUMENT, "weight name '%s' is longer than %zu bytes", n.c_str(),
                                 WeightRequest::kMaxNameBytes - 1);
            out->add(std::move(n));
        }
        return TDM_OK;
    }

private:
    const tdm_host_api* host_;
    tdm_loader* loader_;
    bool hf_;
    Err err_;
    int layer_ = -1;
    const char* prefix_gguf_ = "";
    const char* prefix_hf_ = "";
};

}  // namespace tdm::sdk

#endif  // TANDEM_CPP_WEIGHTS_HPP
