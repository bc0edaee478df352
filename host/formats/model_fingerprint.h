/* SPDX-License-Identifier: Apache-2.0 */
// host/formats/model_fingerprint.h: a content hash that identifies a model
// without reading its weights, so that files derived from one model (prompt
// caches, saved sequence states) are refused by any other.
//
// The hash covers the metadata (GGUF: every byte before the data section, i.e.
// the key/values and the tensor table as stored; safetensors: config.json and
// each shard's header) and, for both, the tensor table as ModelSource sees it
// (names, types, shapes, sizes, offsets). The tensor bytes are not read: that
// would take seconds on large files. Two files with the same metadata and
// tensor layout but different weights hash the same; every converter or
// quantizer writes different metadata or layout, so in practice a fingerprint
// names one model file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "formats/model_source.h"

namespace tdm {

uint64_t model_fingerprint(const ModelSource& source);

// 16 lowercase hex digits.
std::string fingerprint_hex(uint64_t fingerprint);

// 64-bit FNV-1a, continued from `h` (the offset basis by default).
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;
uint64_t fnv1a64(const void* data, size_t n, uint64_t h = kFnvOffset);
inline uint64_t fnv1a64(std::string_view s, uint64_t h = kFnvOffset) { return fnv1a64(s.data(), s.size(), h); }

}  // namespace tdm
