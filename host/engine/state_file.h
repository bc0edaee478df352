/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/state_file.h: saving one sequence's state to a file and loading
// it back (prompt caches: `tandem run --prompt-cache`; a chat's /save and
// /load). The file (state_file_format.h) holds the tokens, the sequence's KV
// rows of positions [0, n) (per position, so a pool of another block size or
// size loads it), the recurrent states of hybrid models at length n, one
// section per drafter with state of its own, and an opaque "extra" string (the
// chat's conversation). It is tied to one model (model_fingerprint()) and one KV
// element type; anything else, and any corrupt or truncated file, is refused
// with a message naming the file and what differs.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv/kv_pool.h"
#include "model/model.h"
#include "speculative/drafter.h"

namespace tdm {

struct SavedStateInfo {
    uint64_t file_bytes = 0;  // as written
    uint64_t kv_bytes = 0;    // the raw KV and recurrent-state bytes it holds
};

// Writes the state of `seq`, whose KV holds exactly `tokens` (and, for hybrid
// models, whose current checkpoint has seen them all), atomically: a temporary
// file next to `path`, then a rename. Drafters with state of their own
// (Drafter::save_state) add a section each.
Result<SavedStateInfo> save_sequence_state(const std::string& path, const Model& model, const KvPool& kv, int seq,
                                           std::span<const int32_t> tokens, std::span<Drafter* const> drafters = {},
                                           std::string_view extra = {}, int zstd_level = 1);

struct LoadedState {
    std::vector<int32_t> tokens;  // what the KV of the sequence now holds
    std::string extra;
    uint64_t file_bytes = 0;
};

// Replaces the contents of live sequence `seq` with the file's; every drafter
// that needs a saved state (Drafter::needs_saved_state) gets its section.
// Errors start with the path. A file refused from its header (another model or
// KV type, missing drafter state, truncated, bad magic, newer version) leaves
// the sequence as it was; one found corrupt while its payload was being read
// into the KV leaves it empty (length 0). Drafters are reset by their next
// begin() either way.
Result<LoadedState> load_sequence_state(const std::string& path, const Model& model, KvPool& kv, int seq,
                                        std::span<Drafter* const> drafters = {});

// "qwen3 model.gguf": how files and messages name a model.
std::string model_label(const Model& model);

}  // namespace tdm
