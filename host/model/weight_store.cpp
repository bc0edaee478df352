// SPDX-License-Identifier: Apache-2.0
// host/model/weight_store.cpp
#include "model/weight_store.h"

#include <tandem/ext/weight_transforms.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <deque>

#include "common/fp16.h"
#include "common/log.h"
#include "common/quant.h"
#include "model/weight_check.h"
#include "ops/limits.h"

namespace tdm {

std::string shape_string(const int64_t* ne, uint32_t n_dims) {
    std::string s = "[";
    for (uint32_t i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

WeightStore::WeightStore(vk::Device& device, std::string owner, uint64_t block_bytes)
    : device_(device), owner_(std::move(owner)), arena_(device, vk::MemoryKind::device, "weights of " + owner_,
                                                       block_bytes) {}

namespace {

// The fields of tdm_weight_request a plugin built against an older header may lack.
constexpr size_t kRequestV1Base = offsetof(tdm_weight_request, parts);

// Shape check: the expected dims (0 = any); trailing 1s are equivalent.
Status check_shape(const ModelSource& src, const SourceTensor& t, const tdm_weight_request& req) {
    const uint32_t n_dims = std::max<uint32_t>(1, std::min<uint32_t>(req.n_dims, 4));
    int64_t want[4] = {1, 1, 1, 1};
    for (uint32_t i = 0; i < n_dims; ++i) want[i] = req.ne[i];
    for (int i = 0; i < 4; ++i) {
        const int64_t have = t.ne[i];
        if (i < int(n_dims) ? (want[i] != 0 && want[i] != have) : have != 1)
            return Error::format("{}: tensor '{}' has shape {}, expected {}", src.path(), t.name,
                                 shape_string(t.ne, std::max<uint32_t>(uint32_t(t.n_dims), 1)), shape_string(want, n_dims));
    }
    return {};
}

// TDM_WEIGHT_FLATTEN: the tensor as the 2-D [ne0, ne1] of the request, read row-major as
// stored (its innermost dims merged into ne0). ne0 holds whole stored rows, so quantized
// blocks stay whole.
Result<SourceTensor> flatten(const ModelSource& src, const SourceTensor& t, const tdm_weight_request& req) {
    if (req.n_dims != 2 || req.ne[0] <= 0 || req.ne[1] <= 0 || req.n_parts || req.slab_rows)
        return Error::format("load_weight '{}': TDM_WEIGHT_FLATTEN needs a 2-D request with both sizes given, and "
                             "no parts or slab",
                             req.name);
    for (int i = 0; i < 4; ++i)
        if (t.ne[i] <= 0)
            return Error::format("{}: tensor '{}' of shape {} is empty", src.path(), t.name,
                                 shape_string(t.ne, std::max<uint32_t>(uint32_t(t.n_dims), 1)));
    const int64_t total = t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3];
    if (req.ne[0] % t.ne[0] != 0 || total / req.ne[0] != req.ne[1] || total % req.ne[0] != 0)
        return Error::format("{}: tensor '{}' of shape {} does not flatten to [{}, {}]", src.path(), t.name,
                             shape_string(t.ne, std::max<uint32_t>(uint32_t(t.n_dims), 1)), req.ne[0], req.ne[1]);
    SourceTensor f = t;
    f.ne[0] = req.ne[0];
    f.ne[1] = req.ne[1];
    f.ne[2] = f.ne[3] = 1;
    f.n_dims = 2;
    return f;
}

bool is_integer(uint32_t type) {
    return type == TDM_DTYPE_I8 || type == TDM_DTYPE_I16 || type == TDM_DTYPE_I32 || type == TDM_DTYPE_I64;
}

// Integer tensors become f32 exactly or not at all: every value must be below 2^24.
Status check_integers_exact(const ModelSource& src, const SourceTensor& t) {
    const uint64_t n = uint64_t(t.ne[0] * t.ne[1] * t.ne[2] * t.ne[3]);
    const uint32_t es = dtype_traits(t.type)->block_bytes;
    for (uint64_t i = 0; i < n; ++i) {
        int64_t v = 0;
        switch (es) {
            case 1: v = int8_t(t.data[i]); break;
            case 2: { int16_t x; std::memcpy(&x, t.data + 2 * i, 2); v = x; break; }
            case 4: { int32_t x; std::memcpy(&x, t.data + 4 * i, 4); v = x; break; }
            default: std::memcpy(&v, t.data + 8 * i, 8); break;
        }
        if (v > (int64_t(1) << 24) || v < -(int64_t(1) << 24))
            return Error::format("{}: integer tensor '{}' holds {} at element {}, which f32 cannot hold exactly",
                                 src.path(), t.name, v, i);
    }
    return {};
}

Status check_type(const ModelSource& src, const SourceTensor& t, bool to_f32) {
    const DTypeTraits* tr = dtype_traits(t.type);
    if (tr && is_integer(t.type) && !to_f32)
        return Error::format("{}: tensor '{}' has integer type {}; a plugin reads integer tensors only as f32 "
                             "(TDM_WEIGHT_F32)",
                             src.path(), t.name, t.dtype);
    const bool computable = tr != nullptr;
    if (!computable)
        return Error::format("{}: tensor '{}' has type {}, which tandem does not support (supported: f32, f16, bf16, "
                             "q8_0, q4_0, q5_0, q5_1, q4_K, q5_K, q6_K)",
                             src.path(), t.name, t.dtype);
    const uint64_t want = uint64_t(t.ne[1] * t.ne[2] * t.ne[3]) * row_bytes(static_cast<DType>(t.type), uint64_t(t.ne[0]));
    if (want != t.nbytes)
        return Error::format("{}: tensor '{}' holds {} bytes, its shape and type need {}", src.path(), t.name, t.nbytes,
                             want);
    return {};
}

}  // namespace

Result<const DeviceWeight*> WeightStore::load_token_table(const ModelSource& src, const tdm_weight_request& req_in) {
    if (req_in.struct_size < kRequestV1Base || !req_in.name)
        return Error("load_weight: malformed request (struct_size or name)");
    tdm_weight_request req{};
    std::memcpy(&req, &req_in, std::min<size_t>(req_in.struct_size, sizeof req));
    if (req.n_parts || req.slab_rows || req.row_perm || req.col_perm ||
        (req.flags & (TDM_WEIGHT_F32 | TDM_WEIGHT_ADD_ONE | TDM_WEIGHT_NEG_EXP)) || req.n_dims > 2)
        return Error::format("load_weight '{}': a table read by token rows is a 2-D tensor taken as stored (no parts, "
                             "slab, permutation or conversion flags)",
                             req.name);
    const SourceTensor* t = src.find(req.name);
    if (!t || host_tables_ == HostTables::off || (host_tables_ == HostTables::automatic && t->nbytes < host_threshold_))
        return load(src, req_in);
    TDM_TRY(check_shape(src, *t, req));
    TDM_TRY(check_type(src, *t, false));
    if (check_weights_ && checked_.insert(t).second) TDM_TRY(check_weights_finite(src.path(), *t));
    auto w = TDM_TRY(DeviceWeight::in_host_memory(req.name, static_cast<DType>(t->type), t->ne, t->data));
    // the scan above read every page: let them go, a forward faults in only the rows it reads
    src.release_pages(*t);
    TDM_LOG_INFO("weights", "{}: {} stays in host memory ({}); each forward uploads the rows of its tokens", owner_,
                 req.name, vk::format_bytes(t->nbytes));
    source_bytes_ += t->nbytes;
    host_bytes_ += t->nbytes;
    weights_.push_back(std::move(w));
    if (progress_) progress_(source_bytes_);
    return weights_.back().get();
}

Result<const DeviceWeight*> WeightStore::load(const ModelSource& src, const tdm_weight_request& req_in) {
    if (req_in.struct_size < kRequestV1Base || !req_in.name)
        return Error("load_weight: malformed request (struct_size or name)");
    tdm_weight_request req{};
    std::memcpy(&req, &req_in, std::min<size_t>(req_in.struct_size, sizeof req));
    if (req.n_parts > 0 && (!req.parts || req.n_dims > 3))
        return Error::format("load_weight '{}': {} parts need part names and at most 3 dims each", req.name, req.n_parts);

    // the source tensors: one, or the parts stacked along a new outer dim
    std::vector<const SourceTensor*> parts;
    std::deque<SourceTensor> flattened;  // TDM_WEIGHT_FLATTEN views of `parts`
    const uint32_t n_parts = std::max<uint32_t>(1, req.n_parts);
    for (uint32_t p = 0; p < n_parts; ++p) {
        const char* name = req.n_parts ? req.parts[p] : req.name;
        const SourceTensor* t = name ? src.find(name) : nullptr;
        if (!t) {
            if ((req.flags & TDM_WEIGHT_OPTIONAL) && p == 0) return static_cast<const DeviceWeight*>(nullptr);
            return Error::format("{}: missing tensor '{}'", src.path(), name ? name : "(null)");
        }
        const bool want_f32 = req.flags & (TDM_WEIGHT_F32 | TDM_WEIGHT_ADD_ONE | TDM_WEIGHT_NEG_EXP);
        const SourceTensor* stored = t;  // checked once as stored, whatever view a request takes
        if (req.flags & TDM_WEIGHT_FLATTEN) {
            flattened.push_back(TDM_TRY(flatten(src, *t, req)));
            t = &flattened.back();
        }
        TDM_TRY(check_shape(src, *t, req));
        TDM_TRY(check_type(src, *t, want_f32));
        if (is_integer(t->type)) TDM_TRY(check_integers_exact(src, *t));
        if (check_weights_ && checked_.insert(stored).second) TDM_TRY(check_weights_finite(src.path(), *t));
        if (!parts.empty() && (t->type != parts[0]->type || std::memcmp(t->ne, parts[0]->ne, sizeof t->ne) != 0))
            return Error::format("{}: '{}' and '{}' differ in type or shape; they cannot be stacked", src.path(),
                                 parts[0]->name, t->name);
        parts.push_back(t);
    }
    const SourceTensor& t0 = *parts[0];
    const DTypeTraits* tr = dtype_traits(t0.type);
    const DType stype = static_cast<DType>(t0.type);
    int64_t ne[4] = {t0.ne[0], t0.ne[1], t0.ne[2], t0.ne[3]};
    const int64_t part_rows = ne[1] * ne[2] * ne[3];
    if (req.n_parts) ne[std::max<uint32_t>(1, req.n_dims)] = req.n_parts;
    const int64_t slab = ne[1];
    if (req.slab_rows > 0) {
        if (req.slab_row_first < 0 || req.slab_row_first + req.slab_rows > slab)
            return Error::format("load_weight '{}': rows [{}, {}) are outside the {} rows of each matrix", req.name,
                                 req.slab_row_first, req.slab_row_first + req.slab_rows, slab);
        ne[1] = req.slab_rows;
    }
    const int64_t cols = ne[0], rows = ne[1] * ne[2] * ne[3];
    const uint64_t src_row = row_bytes(stype, uint64_t(cols));

    const bool to_f32 = req.flags & (TDM_WEIGHT_F32 | TDM_WEIGHT_ADD_ONE | TDM_WEIGHT_NEG_EXP);
    if (req.row_perm) {
        if (req.n_row_perm != uint64_t(rows))
            return Error::format("load_weight '{}': row permutation has {} entries for {} rows", req.name,
                                 req.n_row_perm, rows);
        for (uint64_t r = 0; r < req.n_row_perm; ++r)
            if (req.row_perm[r] < 0 || req.row_perm[r] >= rows)
                return Error::format("load_weight '{}': row permutation entry {} out of range", req.name, r);
    }
    if (req.col_perm) {
        if (tr->quantized)
            return Error::format("load_weight '{}': a column permutation needs an unquantized tensor, this one is {}",
                                 req.name, tr->name);
        if (req.n_col_perm != uint64_t(cols))
            return Error::format("load_weight '{}': column permutation has {} entries for {} columns", req.name,
                                 req.n_col_perm, cols);
        for (uint64_t c = 0; c < req.n_col_perm; ++c)
            if (req.col_perm[c] < 0 || req.col_perm[c] >= cols)
                return Error::format("load_weight '{}': column permutation entry {} out of range", req.name, c);
    }

    const DType dtype = to_f32 ? DType::F32 : stype;
    const uint64_t out_row = row_bytes(dtype, uint64_t(cols));
    const uint32_t es = tr->quantized ? 0 : tr->block_bytes;  // element size of plain types
    std::vector<float> frow(size_t(cols), 0.0f);
    std::vector<uint8_t> prow(static_cast<size_t>(src_row));
    const uint32_t flags = req.flags;
    // output row -> (part, row of that part): row_perm, then the slab range, then the stack
    auto source_row = [&](int64_t r) -> const uint8_t* {
        int64_t s = req.row_perm ? req.row_perm[r] : r;
        if (req.slab_rows > 0) s = (s / req.slab_rows) * slab + req.slab_row_first + s % req.slab_rows;
        return parts[size_t(s / part_rows)]->data + uint64_t(s % part_rows) * src_row;
    };
    DeviceWeight::RowSource rows_fn = [&](uint8_t* dst, int64_t r0, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
            const uint8_t* row = source_row(r0 + i);
            if (req.col_perm) {  // plain types only
                for (int64_t c = 0; c < cols; ++c)
                    std::memcpy(prow.data() + uint64_t(c) * es, row + uint64_t(req.col_perm[c]) * es, es);
                row = prow.data();
            }
            uint8_t* out = dst + uint64_t(i) * out_row;
            if (!to_f32) {
                std::memcpy(out, row, src_row);
                continue;
            }
            dequantize_row(stype, row, frow.data(), cols);
            for (int64_t c = 0; c < cols; ++c) {
                float v = frow[size_t(c)];
                if (flags & TDM_WEIGHT_ADD_ONE) v = 1.0f + v;
                if (flags & TDM_WEIGHT_NEG_EXP) v = -std::exp(v);
                frow[size_t(c)] = v;
            }
            std::memcpy(out, frow.data(), out_row);
        }
    };
    auto w = TDM_TRY_CTX(DeviceWeight::upload(device_, arena_, req.name, dtype, ne, rows_fn, upload_),
                         fmt::format("loading {}", req.name));
    for (const SourceTensor* t : parts) {
        // A fused tensor split into slabs is read once per slab: its pages go after the
        // read that completes its rows, so a 26B-A4B's gate_up experts do not stay resident.
        if (req.slab_rows == 0 || (slab_rows_read_[t] += req.slab_rows) >= slab) src.release_pages(*t);
        source_bytes_ += req.slab_rows > 0 ? t->nbytes / uint64_t(slab) * uint64_t(req.slab_rows) : t->nbytes;
    }
    bytes_ += w->device_bytes();
    weights_.push_back(std::move(w));
    if (progress_) progress_(source_bytes_);
    return weights_.back().get();
}

Result<const DeviceWeight*> WeightStore::load_vector(const ModelSource& src, const tdm_weight_request& req_in,
                                                     uint32_t transforms) {
    if (req_in.struct_size < kRequestV1Base || !req_in.name)
        return Error("load_weight: malformed request (struct_size or name)");
    tdm_weight_request req{};
    std::memcpy(&req, &req_in, std::min<size_t>(req_in.struct_size, sizeof req));
    constexpr uint32_t kKnown = TDM_WEIGHT_TRANSFORM_ADD_INDEX | TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS;
    if (transforms & ~kKnown)
        return Error::coded(TDM_ERR_UNSUPPORTED,
                            "tdm.weight_transforms load '{}': transform bits {:#x} are unknown to this host (it knows "
                            "ADD_INDEX 0x1 and ELEMENT_ROWS 0x2)",
                            req.name, transforms & ~kKnown);
    if (req.n_dims != 1 || req.n_parts || req.slab_rows || req.row_perm || req.col_perm ||
        (req.flags & ~uint32_t(TDM_WEIGHT_OPTIONAL | TDM_WEIGHT_F32)))
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "tdm.weight_transforms load '{}': the request must be a vector (n_dims 1) without parts, "
                            "slab, permutations or flags other than TDM_WEIGHT_OPTIONAL and TDM_WEIGHT_F32",
                            req.name);
    const SourceTensor* t = src.find(req.name);
    if (!t) {
        if (req.flags & TDM_WEIGHT_OPTIONAL) return static_cast<const DeviceWeight*>(nullptr);
        return Error::format("{}: missing tensor '{}'", src.path(), req.name);
    }
    TDM_TRY(check_shape(src, *t, req));
    TDM_TRY(check_type(src, *t, true));
    const bool integer = is_integer(t->type);
    if (integer) TDM_TRY(check_integers_exact(src, *t));
    if (check_weights_ && checked_.insert(t).second) TDM_TRY(check_weights_finite(src.path(), *t));
    const int64_t n = t->ne[0];
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(static_cast<DType>(t->type), t->data, v.data(), n);
    if (transforms & TDM_WEIGHT_TRANSFORM_ADD_INDEX) {
        constexpr int64_t kExact = int64_t(1) << 24;  // integers f32 holds exactly
        if (n > kExact)
            return Error::format("{}: tensor '{}' has {} elements: past 2^24 f32 cannot hold each index exactly",
                                 src.path(), t->name, n);
        for (int64_t i = 0; i < n; ++i) {
            // integer sources stay exact, as the ids they are; a float source gets f32's sum
            if (integer && std::abs(int64_t(v[size_t(i)]) + i) > kExact)
                return Error::format("{}: integer tensor '{}' holds {} at element {}; with its index added, {} is "
                                     "more than f32 can hold exactly",
                                     src.path(), t->name, int64_t(v[size_t(i)]), i, int64_t(v[size_t(i)]) + i);
            v[size_t(i)] += float(i);
        }
    }
    int64_t ne[4] = {n, 1, 1, 1};
    if (transforms & TDM_WEIGHT_TRANSFORM_ELEMENT_ROWS) {
        // row i = (v[i], 0, ...): the narrowest row get_rows reads, whole 16-byte texels
        constexpr int64_t W = kGetRowsWidthMultiple;
        static_assert(W * sizeof(float) % kWeightRowAlignBytes == 0);
        std::vector<float> rows(size_t(W * n), 0.0f);
        for (int64_t i = 0; i < n; ++i) rows[size_t(i * W)] = v[size_t(i)];
        v = std::move(rows);
        ne[0] = W;
        ne[1] = n;
    }
    auto w = TDM_TRY_CTX(DeviceWeight::upload(device_, arena_, req.name, DType::F32, ne,
                                              reinterpret_cast<const uint8_t*>(v.data()), upload_),
                         fmt::format("loading {}", req.name));
    src.release_pages(*t);
    source_bytes_ += t->nbytes;
    bytes_ += w->device_bytes();
    weights_.push_back(std::move(w));
    if (progress_) progress_(source_bytes_);
    return weights_.back().get();
}

Result<const DeviceWeight*> WeightStore::add_f32(std::string name, std::span<const float> values, int64_t ne0,
                                                 int64_t ne1) {
    if (ne0 <= 0 || ne1 <= 0 || uint64_t(ne0) * uint64_t(ne1) != values.size())
        return Error::format("weight '{}': {} values do not fill [{}, {}]", name, values.size(), ne0, ne1);
    for (float v : values)
        if (!std::isfinite(v)) return Error::format("weight '{}': a computed value is not finite", name);
    const int64_t ne[4] = {ne0, ne1, 1, 1};
    auto w = TDM_TRY(DeviceWeight::upload(device_, arena_, std::move(name), DType::F32, ne,
                                          reinterpret_cast<const uint8_t*>(values.data()), upload_));
    bytes_ += w->device_bytes();
    weights_.push_back(std::move(w));
    return weights_.back().get();
}

const DeviceWeight* WeightStore::find(std::string_view name) const {
    for (const auto& w : weights_)
        if (w->name() == name) return w.get();
    return nullptr;
}

std::vector<const DeviceWeight*> WeightStore::all() const {
    std::vector<const DeviceWeight*> out;
    out.reserve(weights_.size());
    for (const auto& w : weights_) out.push_back(w.get());
    return out;
}

}  // namespace tdm
