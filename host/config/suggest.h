/* SPDX-License-Identifier: Apache-2.0 */
// host/config/suggest.h: "did you mean ...?" for misspelt names (config keys and sections,
// command-line options and subcommands). Not a fuzzy search: it proposes at most one name,
// and only one close enough that the user most likely meant it.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tdm {

// Optimal-string-alignment distance: insertions, deletions, substitutions and swaps of two
// adjacent characters each cost 1 ("tmep" -> "temp" is 1). Case-sensitive.
size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name` (compared case-insensitively, ignoring leading dashes),
// if it is within max(2, length / 3) edits, or if one is a prefix of the other and the
// shorter has at least 4 characters ("--temperature" -> "--temp"). Ties go to the earlier
// candidate. nullopt when nothing is close.
std::optional<std::string> closest_name(std::string_view name, std::span<const std::string> candidates);

// " (did you mean 'x'?)" or "" when closest_name finds nothing: ready to append to a message.
std::string did_you_mean(std::string_view name, std::span<const std::string> candidates);

}  // namespace tdm
