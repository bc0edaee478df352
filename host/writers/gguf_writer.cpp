// SPDX-License-Identifier: Apache-2.0
// host/writers/gguf_writer.cpp: GGUF v3 encoding and the streaming file writer.
#include "writers/gguf_writer.h"

#include "formats/ggml_types.h"
#include "formats/gguf.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>

namespace tdm {
namespace {

constexpr uint32_t kVersion = 3;
constexpr size_t kMaxTensorName = 63;  // llama.cpp: length < GGML_MAX_NAME (64)

template <class T>
void put(std::string& out, T v) {
    char buf[sizeof(T)];
    std::memcpy(buf, &v, sizeof(T));  // little-endian hosts only, like the reader
    out.append(buf, sizeof(T));
}

void put_string(std::string& out, std::string_view s) {
    put<uint64_t>(out, s.size());
    out.append(s);
}

uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

}  // namespace

// ---- metadata ------------------------------------------------------------------

void GgufWriter::fail(Error e) {
    if (failed_) return;
    failed_ = true;
    first_error_ = std::move(e);
}

void GgufWriter::add_encoded(std::string_view key, std::string encoded) {
    if (key.empty()) return fail(Error("GGUF writer: empty metadata key"));
    if (!keys_.emplace(key).second) return fail(Error::format("GGUF writer: duplicate key '{}'", key));
    kvs_.push_back(Kv{std::string(key), std::move(encoded)});
}

template <class T>
void GgufWriter::add_scalar(std::string_view key, uint32_t type, T v) {
    std::string enc;
    put<uint32_t>(enc, type);
    put<T>(enc, v);
    add_encoded(key, std::move(enc));
}

template <class T>
void GgufWriter::add_scalar_array(std::string_view key, uint32_t elem_type, const std::vector<T>& v) {
    std::string enc;
    enc.reserve(12 + v.size() * sizeof(T));
    put<uint32_t>(enc, uint32_t(GgufType::ARRAY));
    put<uint32_t>(enc, elem_type);
    put<uint64_t>(enc, v.size());
    for (const T& x : v) put<T>(enc, x);
    add_encoded(key, std::move(enc));
}

void GgufWriter::add_value(std::string_view key, const GgufValue& v) {
    std::string enc;
    put<uint32_t>(enc, uint32_t(v.type));
    if (v.type == GgufType::ARRAY) {
        put<uint32_t>(enc, uint32_t(v.elem_type));
        put<uint64_t>(enc, v.count);
    } else if (v.type == GgufType::STRING) {
        put<uint64_t>(enc, v.nbytes);
    }
    enc.append(reinterpret_cast<const char*>(v.data), v.nbytes);
    add_encoded(key, std::move(enc));
}

void GgufWriter::add_u8(std::string_view k, uint8_t v) { add_scalar(k, uint32_t(GgufType::UINT8), v); }
void GgufWriter::add_i8(std::string_view k, int8_t v) { add_scalar(k, uint32_t(GgufType::INT8), v); }
void GgufWriter::add_u16(std::string_view k, uint16_t v) { add_scalar(k, uint32_t(GgufType::UINT16), v); }
void GgufWriter::add_i16(std::string_view k, int16_t v) { add_scalar(k, uint32_t(GgufType::INT16), v); }
void GgufWriter::add_i32(std::string_view k, int32_t v) { add_scalar(k, uint32_t(GgufType::INT32), v); }
void GgufWriter::add_u64(std::string_view k, uint64_t v) { add_scalar(k, uint32_t(GgufType::UINT64), v); }
void GgufWriter::add_i64(std::string_view k, int64_t v) { add_scalar(k, uint32_t(GgufType::INT64), v); }
void GgufWriter::add_f32(std::string_view k, float v) { add_scalar(k, uint32_t(GgufType::FLOAT32), v); }
void GgufWriter::add_f64(std::string_view k, double v) { add_scalar(k, uint32_t(GgufType::FLOAT64), v); }
void GgufWriter::add_bool(std::string_view k, bool v) {
    add_scalar(k, uint32_t(GgufType::BOOL), uint8_t(v ? 1 : 0));
}

void GgufWriter::add_u32(std::string_view k, uint32_t v) {
    if (k == "general.alignment") return set_alignment(v);
    add_scalar(k, uint32_t(GgufType::UINT32), v);
}

void GgufWriter::add_string(std::string_view key, std::string_view v) {
    std::string enc;
    put<uint32_t>(enc, uint32_t(GgufType::STRING));
    put_string(enc, v);
    add_encoded(key, std::move(enc));
}

void GgufWriter::add_array(std::string_view k, const std::vector<uint8_t>& v) {
    add_scalar_array(k, uint32_t(GgufType::UINT8), v);
}
void GgufWriter::add_array(std::string_view k, const std::vector<int8_t>& v) {
    add_scalar_array(k, uint32_t(GgufType::INT8), v);
}
void GgufWriter::add_array(std::string_view k, const std::vector<uint16_t>& v) {
    add_scalar_array(k, uint32_t(GgufType::UINT16), v);
}
void GgufWriter::add_array(std::string_view k, const std::vector<int16_t>& v) {
    add_scalar_array(k, uint32_t(GgufType::INT16), v);
}
void GgufWriter::add_array(std::string_view k, const std::vector<uint32_t>& v) {
    add_scalar_array(k, uint32_t(GgufType::UINT32), v);
}
void GgufWriter::add_array(std::string_view k, const std::vector<int32_t>& v) {
    add_scalar_array(k, uint32_t(GgufType::INT32), v);
}
void GgufWriter::add_array(std::string_view k, const std::vector<uint64_t>& v) {
    add_scalar_array(k, uint32_t(GgufType::UINT64), v);
}
void GgufWriter::add_array(std::string_view k, const std::vector<int64_t>& v) {
    add_scalar_array(k, uint32_t(GgufType::INT64), v);
}
void GgufWriter::add_array(std::string_view k, const std::vector<float>& v) {
    add_scalar_array(k, uint32_t(GgufType::FLOAT32), v);
}
void GgufWriter::add_array(std::string_view k, const std::vector<double>& v) {
    add_scalar_array(k, uint32_t(GgufType::FLOAT64), v);
}

void GgufWriter::add_array(std::string_view k, const std::vector<bool>& v) {
    // std::vector<bool> is packed; GGUF wants one byte per element.
    std::vector<uint8_t> bytes(v.begin(), v.end());
    add_scalar_array(k, uint32_t(GgufType::BOOL), bytes);
}

void GgufWriter::add_array(std::string_view key, const std::vector<std::string>& v) {
    std::string enc;
    put<uint32_t>(enc, uint32_t(GgufType::ARRAY));
    put<uint32_t>(enc, uint32_t(GgufType::STRING));
    put<uint64_t>(enc, v.size());
    for (const std::string& s : v) put_string(enc, s);
    add_encoded(key, std::move(enc));
}

void GgufWriter::set_alignment(uint32_t alignment) {
    if (alignment == 0 || (alignment & (alignment - 1)) != 0)
        return fail(Error::format("GGUF writer: alignment {} is not a power of two", alignment));
    alignment_ = alignment;
    std::string enc;
    put<uint32_t>(enc, uint32_t(GgufType::UINT32));
    put<uint32_t>(enc, alignment);
    // Setting it twice updates the value where it was first added.
    for (Kv& kv : kvs_)
        if (kv.key == "general.alignment") {
            kv.encoded = std::move(enc);
            return;
        }
    add_encoded("general.alignment", std::move(enc));
}

// ---- tensors -------------------------------------------------------------------

Status GgufWriter::add_tensor(std::string name, uint32_t ggml_type, std::vector<int64_t> ne,
                              const void* data, size_t nbytes) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    return add_tensor(std::move(name), ggml_type, std::move(ne),
                      std::vector<uint8_t>(p, p + (p ? nbytes : 0)));
}

Status GgufWriter::add_tensor(std::string name, uint32_t ggml_type, std::vector<int64_t> ne,
                              std::vector<uint8_t> data) {
    if (name.empty() || name.size() > kMaxTensorName)
        return Error::format("GGUF writer: tensor name '{}' is {} bytes (must be 1 to {})", name,
                             name.size(), kMaxTensorName);
    if (tensor_names_.count(name)) return Error::format("GGUF writer: duplicate tensor name '{}'", name);
    uint64_t want = TDM_TRY_CTX(ggml_tensor_nbytes(ggml_type, ne.data(), int(ne.size())),
                                fmt::format("GGUF writer: tensor '{}'", name));
    if (data.size() != want)
        return Error::format("GGUF writer: tensor '{}': {} bytes given, its shape and type need {}", name,
                             data.size(), want);
    tensor_names_.insert(name);
    tensors_.push_back(Tensor{std::move(name), ggml_type, std::move(ne), std::move(data)});
    return {};
}

// ---- output --------------------------------------------------------------------

Status GgufWriter::status() const {
    if (failed_) return first_error_;
    return {};
}

std::string GgufWriter::encode_head() const {
    std::string out;
    out.append("GGUF", 4);
    put<uint32_t>(out, kVersion);
    put<uint64_t>(out, tensors_.size());
    put<uint64_t>(out, kvs_.size());
    for (const Kv& kv : kvs_) {
        put_string(out, kv.key);
        out.append(kv.encoded);
    }
    uint64_t offset = 0;  // relative to the data section, each tensor padded (gguf-py)
    for (const Tensor& t : tensors_) {
        put_string(out, t.name);
        put<uint32_t>(out, uint32_t(t.ne.size()));
        for (int64_t d : t.ne) put<uint64_t>(out, uint64_t(d));
        put<uint32_t>(out, t.type);
        put<uint64_t>(out, offset);
        offset += align_up(t.data.size(), alignment_);
    }
    out.resize(align_up(out.size(), alignment_), '\0');
    return out;
}

namespace {

// Writes the head, then each tensor followed by zeros up to the alignment.
Status emit(const std::string& head, const auto& tensors, uint32_t alignment,
            const std::function<Status(const void*, size_t)>& sink) {
    TDM_TRY(sink(head.data(), head.size()));
    static const char kZeros[256] = {};
    for (const auto& t : tensors) {
        TDM_TRY(sink(t.data.data(), t.data.size()));
        uint64_t pad = align_up(t.data.size(), alignment) - t.data.size();
        while (pad > 0) {
            size_t n = size_t(std::min<uint64_t>(pad, sizeof(kZeros)));
            TDM_TRY(sink(kZeros, n));
            pad -= n;
        }
    }
    return {};
}

}  // namespace

Result<std::string> GgufWriter::to_bytes() const {
    TDM_TRY(status());
    std::string out;
    TDM_TRY(emit(encode_head(), tensors_, alignment_, [&](const void* p, size_t n) {
        if (n > 0) out.append(static_cast<const char*>(p), n);
        return Status{};
    }));
    return out;
}

Status GgufWriter::write_file(const std::string& path) const {
    TDM_TRY(status());
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return Error::format("{}: cannot create: {}", path, std::strerror(errno));
    Status st = emit(encode_head(), tensors_, alignment_, [&](const void* p, size_t n) -> Status {
        if (n > 0 && std::fwrite(p, 1, n, f) != n)
            return Error::format("{}: write failed: {}", path, std::strerror(errno));
        return {};
    });
    if (std::fclose(f) != 0 && st.ok())
        st = Error::format("{}: write failed on close: {}", path, std::strerror(errno));
    if (!st.ok()) std::remove(path.c_str());  // never leave a truncated model behind
    return st;
}

}  // namespace tdm
