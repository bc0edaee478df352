// SPDX-License-Identifier: Apache-2.0
// plugins/eagle3/synth/eagle3_target.cpp: the shape of a synthetic EAGLE-3 head read from its
// target (see eagle3_synth.h; the target's keys: synth/synth_target.h), and the draft
// vocabulary picked from the seed.
#include "eagle3/synth/eagle3_synth.h"

#include "synth/synth_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace tdm::synth {
namespace {

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

}  // namespace

Result<Eagle3Shape> eagle3_shape_for_target(const std::string& target, std::optional<int64_t> n_vocab_draft) {
    if (target.empty())
        return Error("synth: --arch eagle3 needs --target FILE, the model the head drafts for (its shapes follow it)");
    const SynthTargetShape k = TDM_TRY(read_synth_target(target, "eagle3 synth"));
    if (k.n_embd < 4 || k.n_embd % 4 || k.n_head < 1 || k.n_head_kv < 1 || k.n_head % k.n_head_kv || k.head_dim < 4 ||
        k.head_dim % 4 || k.n_ff < 1 || k.n_layer < 1 || k.n_vocab < 8 || k.n_vocab > (1 << 24))
        return Error::format("eagle3 synth: {}: the target's shape (n_embd {}, {} heads / {} KV heads of {}, n_ff {}, "
                             "{} layers, vocabulary {}) does not fit an EAGLE-3 head",
                             target, k.n_embd, k.n_head, k.n_head_kv, k.head_dim, k.n_ff, k.n_layer, k.n_vocab);
    Eagle3Shape s;
    s.n_embd = s.n_embd_target = int32_t(k.n_embd);
    s.n_head = int32_t(k.n_head);
    s.n_head_kv = int32_t(k.n_head_kv);
    s.head_dim = int32_t(k.head_dim);
    s.n_ff = int32_t(k.n_ff);
    s.n_vocab = int32_t(k.n_vocab);
    if (n_vocab_draft && (*n_vocab_draft < 4 || *n_vocab_draft % 4 || *n_vocab_draft > k.n_vocab))
        return Error::format("synth: --draft-vocab {}: the draft vocabulary is a multiple of 4 from 4 to the "
                             "target's vocabulary, {} tokens in {}",
                             *n_vocab_draft, k.n_vocab, target);
    s.n_vocab_draft = n_vocab_draft ? int32_t(*n_vocab_draft) : std::max<int32_t>(4, int32_t(k.n_vocab / 2) / 4 * 4);
    s.rope_theta = float(k.rope_theta);
    s.rms_eps = float(k.rms_eps);
    const int32_t L = int32_t(k.n_layer);
    std::vector<int32_t> layers = L >= 6 ? std::vector<int32_t>{2, L / 2, L - 3} : std::vector<int32_t>{0, L / 2, L - 1};
    for (int32_t l : layers)
        if (std::find(s.target_layers.begin(), s.target_layers.end(), l) == s.target_layers.end())
            s.target_layers.push_back(l);
    return s;
}

std::vector<int64_t> eagle3_draft_ids(const Eagle3Shape& s, uint64_t seed) {
    // the n_vocab_draft ids of lowest hash, ascending: a fixed, seed-dependent subset
    std::vector<std::pair<uint64_t, int64_t>> scored(size_t(s.n_vocab));
    for (int64_t t = 0; t < s.n_vocab; ++t) scored[size_t(t)] = {splitmix64(seed * 0x100000001B3ull + uint64_t(t)), t};
    std::nth_element(scored.begin(), scored.begin() + s.n_vocab_draft, scored.end());
    std::vector<int64_t> ids;
    ids.reserve(size_t(s.n_vocab_draft));
    for (int32_t i = 0; i < s.n_vocab_draft; ++i) ids.push_back(scored[size_t(i)].second);
    std::sort(ids.begin(), ids.end());
    return ids;
}

}  // namespace tdm::synth
