// SPDX-License-Identifier: Apache-2.0
// host/writers/safetensors_writer.cpp: header encoding, data order, streaming and sharding for
// SafetensorsWriter (see the header for the layout).
#include "writers/safetensors_writer.h"

#include "formats/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace tdm {
namespace {

// JSON string literal (quotes and escapes) for a name or metadata value.
std::string json_quote(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

}  // namespace

void SafetensorsWriter::add_metadata(std::string key, std::string value) {
    metadata_[std::move(key)] = std::move(value);
}

Status SafetensorsWriter::check_new(const std::string& name, const std::string& dtype,
                                    const std::vector<int64_t>& shape, uint32_t* bits, uint64_t* nbytes) const {
    if (name.empty()) return Error("safetensors writer: empty tensor name");
    if (name == "__metadata__") return Error("safetensors writer: '__metadata__' is reserved, not a tensor name");
    if (names_.count(name)) return Error::format("safetensors writer: duplicate tensor name '{}'", name);
    *bits = safetensors_dtype_bits(dtype);
    if (*bits == 0) return Error::format("safetensors writer: tensor '{}': unknown dtype '{}'", name, dtype);
    uint64_t n = 1;
    for (int64_t d : shape) {
        if (d < 0) return Error::format("safetensors writer: tensor '{}': negative dimension {}", name, d);
        if (__builtin_mul_overflow(n, uint64_t(d), &n))
            return Error::format("safetensors writer: tensor '{}': too many elements", name);
    }
    uint64_t total_bits = 0;
    if (__builtin_mul_overflow(n, uint64_t(*bits), &total_bits) || total_bits % 8 != 0)
        return Error::format("safetensors writer: tensor '{}': {} elements of {} do not fill whole bytes", name, n,
                             dtype);
    *nbytes = total_bits / 8;
    return {};
}

Status SafetensorsWriter::add_tensor(std::string name, std::string dtype, std::vector<int64_t> shape,
                                     const void* data, size_t nbytes) {
    const uint8_t* p = static_cast<const uint8_t*>(data);
    if (!p && nbytes > 0) return Error::format("safetensors writer: tensor '{}': null data", name);
    return add_tensor(std::move(name), std::move(dtype), std::move(shape),
                      p ? std::vector<uint8_t>(p, p + nbytes) : std::vector<uint8_t>());
}

Status SafetensorsWriter::add_tensor(std::string name, std::string dtype, std::vector<int64_t> shape,
                                     std::vector<uint8_t> data) {
    uint32_t bits = 0;
    uint64_t nbytes = 0;
    TDM_TRY(check_new(name, dtype, shape, &bits, &nbytes));
    if (data.size() != nbytes)
        return Error::format("safetensors writer: tensor '{}': {} bytes given, shape and dtype {} need {}", name,
                             data.size(), dtype, nbytes);
    names_.insert(name);
    tensors_.push_back(Tensor{std::move(name), std::move(dtype), bits, std::move(shape), nbytes, std::move(data), {}});
    return {};
}

Status SafetensorsWriter::add_tensor(std::string name, std::string dtype, std::vector<int64_t> shape, Fill fill) {
    uint32_t bits = 0;
    uint64_t nbytes = 0;
    TDM_TRY(check_new(name, dtype, shape, &bits, &nbytes));
    if (!fill) return Error::format("safetensors writer: tensor '{}': empty fill callback", name);
    names_.insert(name);
    tensors_.push_back(Tensor{std::move(name), std::move(dtype), bits, std::move(shape), nbytes, {}, std::move(fill)});
    return {};
}

uint64_t SafetensorsWriter::data_bytes() const {
    uint64_t n = 0;
    for (const Tensor& t : tensors_) n += t.nbytes;
    return n;
}

// The reference writer (safetensors tensor.rs `prepare`) sorts by dtype alignment, largest
// first, then by name; following it keeps our files byte-compatible with real checkpoints.
std::vector<const SafetensorsWriter::Tensor*> SafetensorsWriter::data_order() const {
    std::vector<const Tensor*> order;
    order.reserve(tensors_.size());
    for (const Tensor& t : tensors_) order.push_back(&t);
    std::sort(order.begin(), order.end(), [](const Tensor* a, const Tensor* b) {
        return a->bits != b->bits ? a->bits > b->bits : a->name < b->name;
    });
    return order;
}

std::string SafetensorsWriter::encode_header(const std::vector<const Tensor*>& tensors) const {
    std::string h = "{";
    bool first = true;
    if (!metadata_.empty()) {
        h += "\"__metadata__\":{";
        for (auto it = metadata_.begin(); it != metadata_.end(); ++it) {
            if (it != metadata_.begin()) h += ",";
            h += json_quote(it->first) + ":" + json_quote(it->second);
        }
        h += "}";
        first = false;
    }
    uint64_t offset = 0;
    for (const Tensor* t : tensors) {
        if (!first) h += ",";
        first = false;
        h += json_quote(t->name) + ":{\"dtype\":" + json_quote(t->dtype) + ",\"shape\":[";
        for (size_t i = 0; i < t->shape.size(); ++i) h += (i ? "," : "") + std::to_string(t->shape[i]);
        h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + t->nbytes) + "]}";
        offset += t->nbytes;
    }
    h += "}";
    // Pad with spaces so the byte buffer starts 8-byte aligned (8 + h.size() is a multiple of 8).
    h.append((8 - h.size() % 8) % 8, ' ');
    return h;
}

Status SafetensorsWriter::emit(const std::vector<const Tensor*>& tensors, const Sink& sink) const {
    const std::string header = encode_header(tensors);
    const uint64_t n = header.size();
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = uint8_t(n >> (8 * i));  // little-endian
    TDM_TRY(sink(len, 8));
    TDM_TRY(sink(header.data(), header.size()));
    std::vector<uint8_t> buffer;
    for (const Tensor* t : tensors) {
        if (!t->fill) {
            TDM_TRY(sink(t->data.data(), t->data.size()));
            continue;
        }
        // One tensor at a time: the buffer is reused, so peak memory is the largest tensor.
        buffer.assign(t->nbytes, 0);
        TDM_TRY_CTX(t->fill(buffer.data()), fmt::format("safetensors writer: producing tensor '{}'", t->name));
        TDM_TRY(sink(buffer.data(), buffer.size()));
    }
    return {};
}

Status SafetensorsWriter::write_one(const std::string& path, const std::vector<const Tensor*>& tensors) const {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return Error::format("{}: cannot create: {}", path, std::strerror(errno));
    Status st = emit(tensors, [&](const void* p, size_t n) -> Status {
        if (n > 0 && std::fwrite(p, 1, n, f) != n) return Error::format("{}: write failed: {}", path, std::strerror(errno));
        return {};
    });
    if (std::fclose(f) != 0 && st.ok()) st = Error::format("{}: write failed on close: {}", path, std::strerror(errno));
    if (!st.ok()) std::remove(path.c_str());  // never leave a truncated checkpoint behind
    return st;
}

Status SafetensorsWriter::write_file(const std::string& path) const { return write_one(path, data_order()); }

Result<std::string> SafetensorsWriter::to_bytes() const {
    std::string out;
    TDM_TRY(emit(data_order(), [&](const void* p, size_t n) -> Status {
        out.append(static_cast<const char*>(p), n);
        return {};
    }));
    return out;
}

Status SafetensorsWriter::write_sharded(const std::string& dir, uint64_t max_shard_bytes, std::string_view prefix) const {
    if (max_shard_bytes == 0) return Error("safetensors writer: shard size limit must be positive");
    std::vector<std::vector<const Tensor*>> shards;
    uint64_t current = 0;
    for (const Tensor* t : data_order()) {
        if (shards.empty() || (current > 0 && current + t->nbytes > max_shard_bytes)) {
            shards.emplace_back();
            current = 0;
        }
        shards.back().push_back(t);
        current += t->nbytes;
    }
    if (shards.empty()) shards.emplace_back();  // a checkpoint without tensors is still one file

    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Error::format("{}: cannot create directory: {}", dir, ec.message());

    nlohmann::ordered_json weight_map = nlohmann::ordered_json::object();
    std::vector<std::pair<std::string, std::string>> entries;  // name -> file, sorted by name below
    for (size_t i = 0; i < shards.size(); ++i) {
        const std::string file =
            fmt::format("{}-{:05d}-of-{:05d}.safetensors", prefix, i + 1, shards.size());
        TDM_TRY(write_one(dir + "/" + file, shards[i]));
        for (const Tensor* t : shards[i]) entries.emplace_back(t->name, file);
    }
    std::sort(entries.begin(), entries.end());
    for (const auto& [name, file] : entries) weight_map[name] = file;
    nlohmann::ordered_json index;
    index["metadata"]["total_size"] = data_bytes();
    index["weight_map"] = std::move(weight_map);

    const std::string index_path = dir + "/" + std::string(prefix) + ".safetensors.index.json";
    std::ofstream out(index_path, std::ios::binary);
    out << index.dump(2) << "\n";
    out.close();
    if (!out) return Error::format("{}: write failed", index_path);
    return {};
}

}  // namespace tdm
