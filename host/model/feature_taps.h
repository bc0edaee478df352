/* SPDX-License-Identifier: Apache-2.0 */
// host/model/feature_taps.h: the target states a draft head reads through
// tdm.target_features (tandem/ext/target_features.h), on the host's side of a pass:
// a hidden point that stands for a head's list of taps, the concatenation of a target
// graph's taps into the one hidden output a Runner keeps, and the check that a target
// provides what a head asks for.
//
// A tap list travels as a tdm_hidden_point: everything that hands the hidden point of a
// drafter chain to the engine and the Runner (and compares two drafters' points) carries a
// head's taps unchanged. Values from kFirstTapPoint on name lists interned here, one per
// distinct list for the life of the process.
// Not here: the extension's calls (plugin/target_features_ext.h).
#pragma once

#include <tandem/ext/target_features.h>

#include <span>
#include <string>

#include "common/error.h"
#include "plugin/target_features_ext.h"

struct tdm_graph;

namespace tdm {

inline constexpr uint32_t kFirstTapPoint = 0x100;

// The point standing for `taps` (1..TDM_MAX_FEATURE_TAPS of them, as a head requested).
tdm_hidden_point hidden_point_for_taps(std::span<const tdm_feature_tap> taps);
// The taps `p` stands for; empty for TDM_HIDDEN_NONE, PRE_NORM and POST_NORM.
std::span<const tdm_feature_tap> taps_of(tdm_hidden_point p);

// "the input of layer 3", "the post-norm state".
std::string describe_tap(const tdm_feature_tap& t);

// The states g's build_graph tapped at g.taps.wanted, concatenated in that order: F32
// [n_taps * n_embd, n_tokens]. An error naming `arch` when one of them was never tapped.
Result<TensorId> concat_feature_taps(tdm_graph& g, const std::string& arch);

// A head (`head`) that asks for `taps` of a target (`arch`) whose create provided `p`: an
// error naming both and the first tap the target cannot give.
Status check_taps_provided(std::span<const tdm_feature_tap> taps, const std::string& head, const ProvidedTaps& p,
                           const std::string& arch);

}  // namespace tdm
