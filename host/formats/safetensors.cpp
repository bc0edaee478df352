// SPDX-License-Identifier: Apache-2.0
// host/formats/safetensors.cpp: the header of one .safetensors file (docs/formats/gguf.md B.1,
// B.2): size limits, JSON shape of each entry, dtype sizes, offsets in bounds and no
// overlaps. Holes between tensors are tolerated: the reference reader refuses them, but
// a reader that trusts only each tensor's own offsets is not harmed by them.
// Not here: index files, shards and config.json (safetensors_model.cpp).
#include "formats/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>

namespace tdm {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // reference reader's MAX_HEADER_SIZE

struct DtypeInfo {
    std::string_view name;
    uint32_t bits;
    uint32_t ggml_type;  // kNoGgmlType: tandem reads it only after a plugin converts it
};

constexpr DtypeInfo kDtypes[] = {
    {"F32", 32, 0},           {"F16", 16, 1},           {"BF16", 16, 30},
    {"I32", 32, 26},          {"I16", 16, 25},          {"I8", 8, 24},
    {"BOOL", 8, kNoGgmlType}, {"U8", 8, kNoGgmlType},   {"U16", 16, kNoGgmlType},
    {"U32", 32, kNoGgmlType}, {"F64", 64, kNoGgmlType}, {"I64", 64, 27},
    {"U64", 64, kNoGgmlType}, {"C64", 64, kNoGgmlType}, {"F8_E4M3", 8, kNoGgmlType},
    {"F8_E5M2", 8, kNoGgmlType}, {"F8_E4M3FNUZ", 8, kNoGgmlType},
    {"F8_E5M2FNUZ", 8, kNoGgmlType}, {"F8_E8M0", 8, kNoGgmlType},
    {"F4", 4, kNoGgmlType},   {"F6_E2M3", 6, kNoGgmlType}, {"F6_E3M2", 6, kNoGgmlType},
};

const DtypeInfo* find_dtype(std::string_view name) {
    for (const DtypeInfo& d : kDtypes)
        if (d.name == name) return &d;
    return nullptr;
}

Result<uint64_t> get_uint(const nlohmann::json& v, std::string_view what) {
    if (!v.is_number_unsigned() || v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
        return Error::format("{} must be a non-negative integer, found {}", what, v.dump());
    return v.get<uint64_t>();
}

// The parsed record plus its offsets in the byte buffer, kept for the overlap check.
struct Parsed {
    SafetensorsTensor t;
    uint64_t begin, end;
};

Result<Parsed> parse_entry(const std::string& name, const nlohmann::json& v) {
    if (!v.is_object()) return Error::format("entry is not a JSON object: {}", v.dump());
    Parsed p{};
    p.t.name = name;
    auto dt = v.find("dtype");
    if (dt == v.end() || !dt->is_string()) return Error("missing or non-string \"dtype\"");
    p.t.dtype = dt->get<std::string>();
    const DtypeInfo* info = find_dtype(p.t.dtype);
    if (!info) return Error::format("unknown dtype '{}'", p.t.dtype);
    p.t.ggml_type = info->ggml_type;

    auto sh = v.find("shape");
    if (sh == v.end() || !sh->is_array()) return Error("missing or non-array \"shape\"");
    uint64_t n_elements = 1;
    for (const nlohmann::json& d : *sh) {
        uint64_t dim = TDM_TRY(get_uint(d, "shape entry"));
        p.t.shape.push_back(int64_t(dim));
        if (__builtin_mul_overflow(n_elements, dim, &n_elements))
            return Error::format("shape {} has more elements than fit in 64 bits", sh->dump());
    }
    uint64_t bits = 0;
    if (__builtin_mul_overflow(n_elements, uint64_t(info->bits), &bits))
        return Error::format("shape {} is too large for dtype {}", sh->dump(), p.t.dtype);
    if (bits % 8 != 0)
        return Error::format("shape {} of {}-bit dtype {} does not fill whole bytes", sh->dump(),
                             info->bits, p.t.dtype);
    p.t.nbytes = bits / 8;

    auto off = v.find("data_offsets");
    if (off == v.end() || !off->is_array() || off->size() != 2)
        return Error("missing \"data_offsets\" or not an array [BEGIN, END]");
    p.begin = TDM_TRY(get_uint((*off)[0], "data_offsets BEGIN"));
    p.end = TDM_TRY(get_uint((*off)[1], "data_offsets END"));
    if (p.end < p.begin) return Error::format("data_offsets [{}, {}] end before they begin", p.begin, p.end);
    if (p.end - p.begin != p.t.nbytes)
        return Error::format("data_offsets [{}, {}] hold {} bytes, but shape {} of {} needs {}", p.begin,
                             p.end, p.end - p.begin, sh->dump(), p.t.dtype, p.t.nbytes);

    // ggml view: reversed shape; outer dims beyond the 4th fold into ne[3].
    const size_t n = p.t.shape.size();
    for (int i = 0; i < kMaxDims; ++i) p.t.ne[i] = 1;
    for (size_t i = 0; i < n; ++i) {
        int64_t d = p.t.shape[n - 1 - i];
        if (i < size_t(kMaxDims))
            p.t.ne[i] = d;
        else
            p.t.ne[kMaxDims - 1] *= d;  // cannot overflow: the element count did not
    }
    p.t.n_dims = int(std::clamp<size_t>(n, 1, size_t(kMaxDims)));
    return p;
}

}  // namespace

uint32_t safetensors_dtype_bits(std::string_view dtype) {
    const DtypeInfo* d = find_dtype(dtype);
    return d ? d->bits : 0;
}

bool looks_like_safetensors(const MappedFile& file) {
    if (file.size() < 10) return false;
    uint64_t n;
    std::memcpy(&n, file.data(), 8);
    if (n < 2 || n > file.size() - 8 || n > kMaxHeaderBytes) return false;
    for (uint64_t i = 8; i < 8 + n; ++i) {
        uint8_t ch = file.data()[i];
        if (ch == '{') return true;
        if (ch != ' ' && ch != '\t' && ch != '\n' && ch != '\r') return false;
    }
    return false;
}

Result<std::vector<SafetensorsTensor>> parse_safetensors(const MappedFile& file, uint32_t shard) {
    const std::string& path = file.path();
    const uint64_t size = file.size();
    if (size < 8)
        return Error::format("{}: too small for a safetensors file ({} bytes, the header length alone "
                             "takes 8)",
                             path, size);
    uint64_t header_len;
    std::memcpy(&header_len, file.data(), 8);
    if (header_len > kMaxHeaderBytes)
        return Error::format("{}: safetensors header of {} bytes exceeds the 100 MB limit", path,
                             header_len);
    if (header_len > size - 8)
        return Error::format("{}: safetensors header of {} bytes extends beyond the end of the file "
                             "({} bytes)",
                             path, header_len, size);
    const char* json_begin = reinterpret_cast<const char*>(file.data() + 8);

    // nlohmann keeps the last of two equal keys; catch duplicate tensor names instead.
    std::set<std::string, std::less<>> seen;
    std::string duplicate;
    auto on_event = [&](int depth, nlohmann::json::parse_event_t ev, nlohmann::json& parsed) {
        if (ev == nlohmann::json::parse_event_t::key && depth == 1 && parsed.is_string()) {
            const std::string& key = parsed.get_ref<const std::string&>();
            if (!seen.insert(key).second && duplicate.empty()) duplicate = key;
        }
        return true;
    };
    nlohmann::json header;
    try {
        header = nlohmann::json::parse(json_begin, json_begin + header_len, on_event);
    } catch (const nlohmann::json::exception& e) {
        return Error::format("{}: safetensors header is not valid JSON: {}", path, e.what());
    }
    if (!header.is_object())
        return Error::format("{}: safetensors header is not a JSON object", path);
    if (!duplicate.empty())
        return Error::format("{}: duplicate tensor name '{}' in the safetensors header", path, duplicate);

    const uint64_t buffer_start = 8 + header_len;
    const uint64_t buffer_size = size - buffer_start;
    std::vector<Parsed> parsed;
    for (auto it = header.begin(); it != header.end(); ++it) {
        if (it.key() == "__metadata__") {
            // Strings to strings only (docs/formats/gguf.md B.1); nothing here uses the values.
            bool ok = it.value().is_object();
            for (const auto& m : it.value().items()) ok = ok && m.value().is_string();
            if (!ok) return Error::format("{}: __metadata__ must map strings to strings", path);
            continue;
        }
        Parsed p = TDM_TRY_CTX(parse_entry(it.key(), it.value()),
                               fmt::format("{}: tensor '{}'", path, it.key()));
        if (p.end > buffer_size)
            return Error::format(
                "{}: tensor '{}': data_offsets [{}, {}] extend beyond the data buffer ({} bytes, file "
                "size {})",
                path, it.key(), p.begin, p.end, buffer_size, size);
        p.t.data = file.data() + buffer_start + p.begin;
        p.t.shard = shard;
        parsed.push_back(std::move(p));
    }

    std::sort(parsed.begin(), parsed.end(), [](const Parsed& a, const Parsed& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    });
    const Parsed* prev = nullptr;  // last non-empty tensor
    for (const Parsed& p : parsed) {
        if (p.begin == p.end) continue;  // an empty tensor overlaps nothing
        if (prev && p.begin < prev->end)
            return Error::format("{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", path, prev->t.name,
                                 prev->begin, prev->end, p.t.name, p.begin, p.end);
        prev = &p;
    }
    std::vector<SafetensorsTensor> out;
    out.reserve(parsed.size());
    for (Parsed& p : parsed) out.push_back(std::move(p.t));
    return out;
}

}  // namespace tdm
