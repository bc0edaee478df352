// SPDX-License-Identifier: Apache-2.0
// host/formats/model_fingerprint.cpp
#include "formats/model_fingerprint.h"

#include <nlohmann/json.hpp>
#include <fmt/format.h>

#include <algorithm>

namespace tdm {

uint64_t fnv1a64(const void* data, size_t n, uint64_t h) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

namespace {

template <class T>
uint64_t mix(uint64_t h, const T& v) {
    return fnv1a64(&v, sizeof v, h);
}

uint64_t mix_string(uint64_t h, std::string_view s) {
    h = mix(h, uint64_t(s.size()));  // length first: "ab"+"c" differs from "a"+"bc"
    return fnv1a64(s, h);
}

}  // namespace

uint64_t model_fingerprint(const ModelSource& source) {
    uint64_t h = mix_string(kFnvOffset, source_format_name(source.format()));
    h = mix_string(h, source.architecture());
    if (const GgufFile* g = source.gguf()) {
        const uint64_t n = std::min<uint64_t>(g->data_offset(), g->file().size());
        h = mix(h, n);
        h = fnv1a64(g->file().data(), size_t(n), h);
    }
    if (const SafetensorsModel* st = source.safetensors()) {
        if (const nlohmann::json* cfg = source.hf_config()) h = mix_string(h, cfg->dump());
        for (size_t i = 0; i < st->shard_count(); ++i) {
            // each shard starts with its header: u64 length, then that much JSON
            const MappedFile& f = st->shard(uint32_t(i));
            uint64_t len = 0;
            if (f.size() >= 8) {
                for (int b = 7; b >= 0; --b) len = (len << 8) | f.data()[b];
                len = std::min<uint64_t>(len, f.size() - 8);
            }
            h = mix(h, len);
            if (f.size() >= 8) h = fnv1a64(f.data() + 8, size_t(len), h);
        }
    }
    h = mix(h, uint64_t(source.tensors().size()));
    for (const SourceTensor& t : source.tensors()) {
        h = mix_string(h, t.name);
        h = mix_string(h, t.dtype);
        h = mix(h, t.type);
        h = mix(h, t.n_dims);
        for (int64_t d : t.ne) h = mix(h, d);
        h = mix(h, t.nbytes);
        const uint64_t offset = t.file && t.data ? uint64_t(t.data - t.file->data()) : 0;
        h = mix(h, offset);
    }
    return h;
}

std::string fingerprint_hex(uint64_t fingerprint) { return fmt::format("{:016x}", fingerprint); }

}  // namespace tdm
