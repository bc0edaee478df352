/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/state_file_format.h: the header of a sequence-state file (a saved
// prompt cache, a chat's /save), written and checked without a device.
//
// A file is this header, uncompressed, then one zstd frame (content checksum
// on) holding the payload: the token ids (i32 each), the sequence's KV in
// KvPool::export_sequence() order (a layer of window W > 0: its last min(n, W)
// positions; version 1 had every position of every layer), each drafter
// section's bytes, then the extra string. All little-endian. The header:
//
//   0   "TDMSTATE"            8 bytes
//   8   u32 version           kStateFormatVersion; a newer one is refused
//   12  u32 header_bytes      the whole header, this hash included
//   16  u64 fingerprint       model_fingerprint() of the model
//   24  u32 kv_element_bytes  2 (f16) or 4 (f32)
//   28  u32 n_tokens, n_layers, n_states, n_sections, 0
//   48  u64 extra_bytes, payload_bytes (the zstd frame), raw_bytes (its content)
//   72  str model             u32 length + bytes (for messages: "qwen3 model.gguf")
//       n_layers x (u32 n_kv_head, u32 dim_k, u32 dim_v, u32 window)  (version 1: no window)
//       n_states x u64 floats
//       n_sections x (str name, u64 bytes)
//   end u64 FNV-1a of every header byte before it
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/error.h"

namespace tdm {

inline constexpr char kStateMagic[8] = {'T', 'D', 'M', 'S', 'T', 'A', 'T', 'E'};
inline constexpr uint32_t kStateFormatVersion = 2;

struct StateLayerShape {
    uint32_t n_kv_head = 0, dim_k = 0, dim_v = 0;
    uint32_t window = 0;  // sliding window (version 2); 0: full attention, every position saved
    bool operator==(const StateLayerShape&) const = default;
    uint32_t rows(uint32_t n_tokens) const { return window && window < n_tokens ? window : n_tokens; }
};

struct StateSection {
    std::string name;  // the drafter's name (its speculative type)
    uint64_t bytes = 0;
};

struct StateHeader {
    uint32_t version = kStateFormatVersion;
    uint64_t fingerprint = 0;
    std::string model;
    uint32_t kv_element_bytes = 2;
    uint32_t n_tokens = 0;
    std::vector<StateLayerShape> layers;
    std::vector<uint64_t> states;  // floats of each recurrent state
    std::vector<StateSection> sections;
    uint64_t extra_bytes = 0;
    uint64_t payload_bytes = 0;    // compressed
    uint64_t raw_bytes = 0;        // the payload's content

    uint64_t kv_bytes() const;     // what KvPool::export_sequence() streams for n_tokens
    uint64_t section_bytes() const;
    uint64_t expected_raw_bytes() const { return uint64_t(n_tokens) * 4 + kv_bytes() + section_bytes() + extra_bytes; }
};

std::string encode_state_header(const StateHeader& h);

// Reads and checks the header of the state file open as `fd` (`file_bytes`
// long); errors say what is wrong ("not a tandem state file (bad magic)",
// "made by a newer tandem: format version 2, this one reads 1", "truncated at
// byte N of M", "corrupt header"), without the path (the caller adds it).
Result<StateHeader> read_state_header(int fd, uint64_t file_bytes);

// Limits a header must respect: nothing is allocated from a hostile file's claims.
inline constexpr uint32_t kStateMaxHeaderBytes = 1u << 20;
inline constexpr uint32_t kStateMaxSections = 64;
inline constexpr uint64_t kStateMaxExtraBytes = 64ull << 20;

}  // namespace tdm
