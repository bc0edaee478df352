// host/model/weight_store.cpp
#include "model/weight_store.h"

#include <cmath>
#include <cstring>

#include "common/fp16.h"
#include "common/quant.h"

namespace tdm {

std::string shape_string(const int64_t* ne, uint32_t n_dims) {
    std::string s = "[";
    for (uint32_t i = 0; i < n_dims; ++i) s += (i ? ", " : "") + std::to_string(ne[i]);
    return s + "]";
}

WeightStore::WeightStore(vk::Device& device, std::string owner, uint64_t block_bytes)
    : device_(device), owner_(std::move(owner)), arena_(device, vk::MemoryKind::device, "weights of " + owner_,
                                                       block_bytes) {}

Result<const DeviceWeight*> WeightStore::load(const ModelSource& src, const tdm_weight_request& req) {
    if (req.struct_size < sizeof(tdm_weight_request) || !req.name)
        return Error("load_weight: malformed request (struct_size or name)");
    const SourceTensor* t = src.find(req.name);
    if (!t) {
        if (req.flags & TDM_WEIGHT_OPTIONAL) return static_cast<const DeviceWeight*>(nullptr);
        return Error::format("{}: missing tensor '{}'", src.path(), req.name);
    }
    // shape: compare the expected dims (0 = any), trailing 1s are equivalent
    uint32_t n_dims = std::max<uint32_t>(1, std::min<uint32_t>(req.n_dims, 4));
    int64_t want[4] = {1, 1, 1, 1};
    for (uint32_t i = 0; i < n_dims; ++i) want[i] = req.ne[i];
    bool match = true;
    for (int i = 0; i < 4; ++i) {
        const int64_t have = t->ne[i];
        if (i < int(n_dims) ? (want[i] != 0 && want[i] != have) : have != 1) match = false;
    }
    if (!match) {
        int64_t shown[4];
        for (int i = 0; i < 4; ++i) shown[i] = want[i];
        return Error::format("{}: tensor '{}' has shape {}, expected {}", src.path(), req.name,
                             shape_string(t->ne, std::max<uint32_t>(t->n_dims, 1)), shape_string(shown, n_dims));
    }
    const DTypeTraits* tr = dtype_traits(t->type);
    const bool computable = tr && t->type != TDM_DTYPE_I8 && t->type != TDM_DTYPE_I16 && t->type != TDM_DTYPE_I32;
    if (!computable)
        return Error::format("{}: tensor '{}' has type {}, which tandem does not support (supported: f32, f16, bf16, "
                             "q8_0, q4_0, q4_K, q5_K, q6_K)",
                             src.path(), req.name, t->dtype);
    const DType stype = static_cast<DType>(t->type);
    const int64_t cols = t->ne[0], rows = t->ne[1] * t->ne[2] * t->ne[3];
    const uint64_t src_row = row_bytes(stype, uint64_t(cols));
    if (uint64_t(rows) * src_row != t->nbytes)
        return Error::format("{}: tensor '{}' holds {} bytes, its shape and type need {}", src.path(), req.name,
                             t->nbytes, uint64_t(rows) * src_row);

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
    const uint8_t* base = t->data;
    const uint32_t es = tr->quantized ? 0 : tr->block_bytes;  // element size of plain types
    std::vector<float> frow(size_t(cols), 0.0f);
    std::vector<uint8_t> prow(static_cast<size_t>(src_row));
    const uint32_t flags = req.flags;
    DeviceWeight::RowSource rows_fn = [&](uint8_t* dst, int64_t r0, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
            const int64_t r = r0 + i;
            const int64_t sr = req.row_perm ? req.row_perm[r] : r;
            const uint8_t* row = base + uint64_t(sr) * src_row;
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
    int64_t ne[4] = {t->ne[0], t->ne[1], t->ne[2], t->ne[3]};
    auto w = TDM_TRY_CTX(DeviceWeight::upload(device_, arena_, req.name, dtype, ne, rows_fn, upload_),
                         fmt::format("loading {}", req.name));
    src.release_pages(*t);
    bytes_ += w->device_bytes();
    source_bytes_ += t->nbytes;
    weights_.push_back(std::move(w));
    if (progress_) progress_(source_bytes_);
    return weights_.back().get();
}

}  // namespace tdm
