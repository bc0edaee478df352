/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/continuation.h: how much of a new prompt a sequence can resume
// from what its KV already holds (chat turns, a restored prompt cache).
//
// A sequence whose KV holds `kv_tokens` (position i holds kv_tokens[i]) can
// keep the longest prefix it shares with the new prompt, short of the prompt's
// last token (whose logits must be computed), provided the KV can be cut there
// (attention KV always can; recurrent state only at a checkpoint) and every
// drafter can resume there. Otherwise it starts over from 0. Batch invariance
// makes either choice produce the same tokens and logits.
#pragma once

#include <cstdint>
#include <span>

#include "kv/kv_pool.h"
#include "speculative/drafter.h"

namespace tdm {

uint32_t shared_prefix(std::span<const int32_t> a, std::span<const int32_t> b);

// The n to pass as GenerateParams::n_cached after kv.truncate(seq, n).
uint32_t resumable_prefix(const KvPool& kv, int seq, std::span<const int32_t> kv_tokens,
                          std::span<const int32_t> prompt, std::span<Drafter* const> drafters = {});

}  // namespace tdm
