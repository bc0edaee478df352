// SPDX-License-Identifier: Apache-2.0
// host/formats/gguf.cpp: parsing and validation of GGUF files (docs/formats/gguf.md A.2-A.7).
// Every read goes through GgufCursor, which refuses to step past the mapping; every
// count is compared with the bytes that remain before anything is allocated for it.
// Not here: the typed metadata getters (gguf_getters.cpp).
#include "formats/gguf.h"

#include "common/dtype.h"
#include "formats/ggml_types.h"

#include <algorithm>
#include <cstring>

namespace tdm {

namespace {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint64_t kMaxStringBytes = uint64_t(1) << 30;  // llama.cpp GGUF_MAX_STRING_LENGTH
constexpr uint64_t kDefaultAlignment = 32;
// Smallest possible records, used to bound counts before reserving memory:
// key (8-byte length + >= 1 byte) + type (4) + smallest value (1).
constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1;
// name length (8) + n_dims (4) + one dim (8) + type (4) + offset (8).
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
// A count that passes the checks above can still be large in a multi-GB file; reserve
// at most this many records up front and let real records grow the vector beyond it.
constexpr uint64_t kMaxReserve = 1 << 16;

// Hostile files put arbitrary bytes in keys and names; keep error messages readable.
std::string printable(std::string_view s) {
    constexpr size_t kMax = 96;
    std::string out;
    for (size_t i = 0; i < s.size() && i < kMax; ++i) {
        unsigned char ch = static_cast<unsigned char>(s[i]);
        if (ch >= 0x20 && ch < 0x7f && ch != '\\')
            out += char(ch);
        else
            out += fmt::format("\\x{:02x}", ch);
    }
    if (s.size() > kMax) out += fmt::format("... ({} bytes)", s.size());
    return out;
}

bool is_valid_type(uint32_t t) { return t <= uint32_t(GgufType::FLOAT64); }

}  // namespace

// ---- type names ----------------------------------------------------------------

std::string_view gguf_type_name(GgufType t) {
    static constexpr std::string_view kNames[] = {
        "UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32",  "FLOAT32",
        "BOOL",  "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
    };
    uint32_t i = uint32_t(t);
    return is_valid_type(i) ? kNames[i] : "invalid";
}

uint32_t gguf_scalar_size(GgufType t) {
    switch (t) {
        case GgufType::UINT8: case GgufType::INT8: case GgufType::BOOL: return 1;
        case GgufType::UINT16: case GgufType::INT16: return 2;
        case GgufType::UINT32: case GgufType::INT32: case GgufType::FLOAT32: return 4;
        case GgufType::UINT64: case GgufType::INT64: case GgufType::FLOAT64: return 8;
        case GgufType::STRING: case GgufType::ARRAY: return 0;
    }
    return 0;
}

std::vector<std::string_view> gguf_string_elements(const GgufValue& v) {
    std::vector<std::string_view> out;
    if (v.type == GgufType::STRING) {
        out.emplace_back(reinterpret_cast<const char*>(v.data), size_t(v.nbytes));
    } else if (v.type == GgufType::ARRAY && v.elem_type == GgufType::STRING) {
        out.reserve(size_t(v.count));
        const uint8_t* p = v.data;
        for (uint64_t i = 0; i < v.count; ++i) {
            uint64_t len;
            std::memcpy(&len, p, 8);  // lengths were bounds-checked by the parser
            out.emplace_back(reinterpret_cast<const char*>(p + 8), size_t(len));
            p += 8 + len;
        }
    }
    return out;
}

// ---- cursor --------------------------------------------------------------------

// Bounds-checked little-endian reads. Errors say where and what; the caller adds
// which record it was in, and open() adds the file name.
class GgufCursor {
public:
    GgufCursor(const uint8_t* base, uint64_t size) : base_(base), size_(size) {}

    uint64_t pos() const { return pos_; }
    uint64_t remaining() const { return size_ - pos_; }
    const uint8_t* here() const { return base_ + pos_; }

    Status need(uint64_t n, std::string_view what) const {
        if (n > remaining())
            return Error::format("truncated at offset {} while reading {} (need {} bytes, {} left)",
                                 pos_, what, n, remaining());
        return {};
    }

    template <class T>
    Result<T> read(std::string_view what) {
        TDM_TRY(need(sizeof(T), what));
        T v;
        std::memcpy(&v, base_ + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }

    void skip(uint64_t n) { pos_ += n; }  // only after need(n)

    // A gguf string: uint64 length + bytes, no terminator.
    Result<std::string_view> string(std::string_view what) {
        uint64_t at = pos_;
        uint64_t len = TDM_TRY(read<uint64_t>(what));
        if (len > kMaxStringBytes)
            return Error::format("{} at offset {} claims {} bytes, more than the 1 GiB limit", what, at,
                                 len);
        TDM_TRY(need(len, what));
        std::string_view s(reinterpret_cast<const char*>(base_ + pos_), size_t(len));
        pos_ += len;
        return s;
    }

private:
    const uint8_t* base_;
    uint64_t size_;
    uint64_t pos_ = 0;
};

namespace {

// Parses the value that follows a key's type field.
Result<GgufValue> parse_value(GgufCursor& c, uint32_t raw_type) {
    if (!is_valid_type(raw_type)) return Error::format("invalid value type {}", raw_type);
    GgufValue v{};
    v.type = GgufType(raw_type);
    v.elem_type = v.type;
    v.count = 1;
    if (v.type == GgufType::STRING) {
        std::string_view s = TDM_TRY(c.string("string value"));
        v.data = reinterpret_cast<const uint8_t*>(s.data());
        v.nbytes = s.size();
        return v;
    }
    if (v.type != GgufType::ARRAY) {
        TDM_TRY(c.need(gguf_scalar_size(v.type), "scalar value"));
        v.data = c.here();
        v.nbytes = gguf_scalar_size(v.type);
        c.skip(v.nbytes);
        return v;
    }
    uint32_t raw_elem = TDM_TRY(c.read<uint32_t>("array element type"));
    if (raw_elem == uint32_t(GgufType::ARRAY)) return Error("nested arrays are not supported");
    if (!is_valid_type(raw_elem)) return Error::format("invalid array element type {}", raw_elem);
    v.elem_type = GgufType(raw_elem);
    v.count = TDM_TRY(c.read<uint64_t>("array length"));
    v.data = c.here();
    // Refuse impossible counts before touching (or allocating for) any element.
    uint64_t min_elem = v.elem_type == GgufType::STRING ? 8 : gguf_scalar_size(v.elem_type);
    if (v.count > c.remaining() / min_elem)
        return Error::format(
            "truncated at offset {} while reading array of {} {} (needs at least {} bytes per "
            "element, {} left)",
            c.pos(), v.count, gguf_type_name(v.elem_type), min_elem, c.remaining());
    if (v.elem_type == GgufType::STRING) {
        uint64_t start = c.pos();
        for (uint64_t i = 0; i < v.count; ++i)
            TDM_TRY_CTX(c.string("string"), fmt::format("array element {}", i));
        v.nbytes = c.pos() - start;
    } else {
        v.nbytes = v.count * min_elem;
        c.skip(v.nbytes);
    }
    return v;
}

}  // namespace

// ---- GgufFile ------------------------------------------------------------------

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
    return from_mapping(TDM_TRY(MappedFile::open(path)));
}

Result<std::unique_ptr<GgufFile>> GgufFile::from_memory(std::string name, std::string bytes) {
    return from_mapping(MappedFile::from_bytes(std::move(name), std::move(bytes)));
}

Result<std::unique_ptr<GgufFile>> GgufFile::from_mapping(std::unique_ptr<MappedFile> file) {
    std::unique_ptr<GgufFile> f(new GgufFile());
    f->file_ = std::move(file);
    Status st = f->parse();
    if (!st.ok()) return st.error().context(f->file_->path());
    return f;
}

Status GgufFile::parse() {
    const uint8_t* p = file_->data();
    const uint64_t size = file_->size();
    if (size < 4 || std::memcmp(p, kMagic, 4) != 0) {
        std::string first;
        for (uint64_t i = 0; i < size && i < 4; ++i) first += fmt::format("{}{:02x}", i ? " " : "", p[i]);
        return Error::format("not a GGUF file: first bytes are [{}], expected [47 47 55 46] (\"GGUF\")",
                             first);
    }
    GgufCursor c(p, size);
    c.skip(4);
    version_ = TDM_TRY(c.read<uint32_t>("version"));
    if (version_ != 0 && (version_ & 0xFFFF) == 0)
        return Error::format(
            "GGUF version field is 0x{:08x}: a byte-swapped (big-endian) file; only little-endian "
            "GGUF versions 2 and 3 are supported",
            version_);
    if (version_ != 2 && version_ != 3)
        return Error::format("GGUF version {} is not supported (supported versions: 2 and 3)", version_);
    uint64_t tensor_count = TDM_TRY(c.read<uint64_t>("tensor count"));
    uint64_t kv_count = TDM_TRY(c.read<uint64_t>("metadata entry count"));
    TDM_TRY(parse_metadata(c, kv_count));
    TDM_TRY(parse_tensor_infos(c, tensor_count));
    // The data section starts at the next multiple of the alignment. The padding may be
    // missing when there are no tensors, so data_offset_ may lie past the end then.
    data_offset_ = (c.pos() + alignment_ - 1) / alignment_ * alignment_;
    return check_tensor_ranges();
}

Status GgufFile::parse_metadata(GgufCursor& c, uint64_t kv_count) {
    if (kv_count > c.remaining() / kMinKvBytes)
        return Error::format(
            "truncated at offset {} while reading {} metadata entries (each needs at least {} bytes, "
            "{} left)",
            c.pos(), kv_count, kMinKvBytes, c.remaining());
    kvs_.reserve(size_t(std::min(kv_count, kMaxReserve)));
    for (uint64_t i = 0; i < kv_count; ++i) {
        auto ctx = [&] { return fmt::format("metadata entry {}", i); };
        std::string_view key = TDM_TRY_CTX(c.string("key"), ctx());
        if (key.empty()) return Error::format("metadata entry {} has an empty key", i);
        auto kctx = [&] { return fmt::format("key '{}' (metadata entry {})", printable(key), i); };
        uint32_t raw_type = TDM_TRY_CTX(c.read<uint32_t>("value type"), kctx());
        GgufValue v = TDM_TRY_CTX(parse_value(c, raw_type), kctx());
        auto [it, inserted] = kv_index_.emplace(key, kvs_.size());
        if (!inserted)
            return Error::format("duplicate key '{}' (metadata entries {} and {})", printable(key),
                                 it->second, i);
        kvs_.push_back(GgufKV{std::string(key), v});
    }
    // general.alignment: UINT32, non-zero power of two (llama.cpp and gguf-py agree).
    if (const GgufValue* a = find("general.alignment")) {
        if (a->type != GgufType::UINT32)
            return Error::format("general.alignment must be UINT32, found {}", gguf_type_name(a->type));
        uint32_t align;
        std::memcpy(&align, a->data, 4);
        if (align == 0 || (align & (align - 1)) != 0)
            return Error::format("general.alignment = {} is not a power of two", align);
        alignment_ = align;
    } else {
        alignment_ = kDefaultAlignment;
    }
    return {};
}

Status GgufFile::parse_tensor_infos(GgufCursor& c, uint64_t tensor_count) {
    if (tensor_count > c.remaining() / kMinTensorInfoBytes)
        return Error::format(
            "truncated at offset {} while reading {} tensor infos (each needs at least {} bytes, {} "
            "left)",
            c.pos(), tensor_count, kMinTensorInfoBytes, c.remaining());
    tensors_.reserve(size_t(std::min(tensor_count, kMaxReserve)));
    for (uint64_t i = 0; i < tensor_count; ++i) {
        std::string_view name = TDM_TRY_CTX(c.string("tensor name"), fmt::format("tensor info {}", i));
        auto ctx = [&] { return fmt::format("tensor '{}' (tensor info {})", printable(name), i); };
        GgufTensorInfo t{};
        t.name = std::string(name);
        t.n_dims = TDM_TRY_CTX(c.read<uint32_t>("n_dims"), ctx());
        if (t.n_dims == 0 || t.n_dims > uint32_t(kMaxDims))
            return Error::format("{}: n_dims = {} (must be 1 to {})", ctx(), t.n_dims, kMaxDims);
        for (int d = 0; d < kMaxDims; ++d) t.ne[d] = 1;
        for (uint32_t d = 0; d < t.n_dims; ++d) {
            // Stored as uint64 by writers, read as int64 by llama.cpp: > 2^63 is negative.
            t.ne[d] = TDM_TRY_CTX(c.read<int64_t>("dimensions"), ctx());
            if (t.ne[d] < 0)
                return Error::format("{}: dimension ne[{}] = {} is negative", ctx(), d, t.ne[d]);
        }
        t.type = TDM_TRY_CTX(c.read<uint32_t>("type"), ctx());
        if (!ggml_type_size(t.type))
            return Error::format("{}: unknown ggml type id {}", ctx(), t.type);
        t.offset = TDM_TRY_CTX(c.read<uint64_t>("data offset"), ctx());
        t.nbytes = TDM_TRY_CTX(ggml_tensor_nbytes(t.type, t.ne, int(t.n_dims)), ctx());
        auto [it, inserted] = tensor_index_.emplace(name, tensors_.size());
        if (!inserted)
            return Error::format("duplicate tensor name '{}' (tensor infos {} and {})", printable(name),
                                 it->second, i);
        tensors_.push_back(std::move(t));
    }
    return {};
}

Status GgufFile::check_tensor_ranges() {
    const uint64_t size = file_->size();
    // Tensor data must follow the order of the tensor infos, each range starting at or
    // after the end of the one before. llama.cpp is stricter still (no gaps either);
    // gaps harm nothing, but two tensors sharing bytes mean one of them (or a retyped,
    // longer one) reads the other's weights, which no writer produces on purpose.
    const GgufTensorInfo* prev = nullptr;  // the last non-empty tensor
    for (GgufTensorInfo& t : tensors_) {
        if (t.offset % alignment_ != 0)
            return Error::format("tensor '{}': data offset {} is not a multiple of the alignment {}",
                                 printable(t.name), t.offset, alignment_);
        uint64_t end = 0;
        if (__builtin_add_overflow(data_offset_, t.offset, &t.file_offset) ||
            __builtin_add_overflow(t.file_offset, t.nbytes, &end))
            return Error::format("tensor '{}': data offset {} + {} bytes overflows 64 bits, beyond the end of the "
                                 "{}-byte file",
                                 printable(t.name), t.offset, t.nbytes, size);
        if (end > size)
            return Error::format(
                "tensor '{}' ({} bytes of {}) at data offset {} extends beyond the end of the file: "
                "bytes [{}, {}) of a {}-byte file",
                printable(t.name), t.nbytes, ggml_type_name(t.type), t.offset, t.file_offset, end, size);
        if (t.nbytes == 0) continue;  // an empty tensor shares bytes with nothing
        if (prev && t.file_offset < prev->file_offset + prev->nbytes) {
            const bool before = t.file_offset < prev->file_offset;
            return Error::format(
                "tensor '{}' (file bytes [{}, {})) {} tensor '{}' (file bytes [{}, {})), which precedes it in the "
                "tensor list; tensor data must not overlap and must follow the order of the list",
                printable(t.name), t.file_offset, end,
                before ? "is stored before" : "overlaps", printable(prev->name), prev->file_offset,
                prev->file_offset + prev->nbytes);
        }
        prev = &t;
    }
    return {};
}

const GgufValue* GgufFile::find(std::string_view key) const {
    auto it = kv_index_.find(key);
    return it == kv_index_.end() ? nullptr : &kvs_[it->second].value;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
    auto it = tensor_index_.find(name);
    return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace tdm
