/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/ordered_body.h: a request body parsed a second time with its objects' members
// in the client's order, for the parts where order shows: tool definitions in the prompt,
// a JSON schema's properties in the output. Not here: reading the fields (the request
// parsers take the ordinary, sorted parse).
//
// Why guarded: nlohmann::ordered_json finds a member by a linear scan, so an object of n
// members parses in O(n^2). A body with a huge object anywhere (an ignored field counts)
// gets no ordered parse; the callers then keep the sorted order, which is as valid.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <optional>
#include <string_view>

namespace tdm::server {

// Objects of more members than this are not parsed in order.
inline constexpr size_t kMaxOrderedMembers = 1024;

inline size_t widest_object(const nlohmann::json& j) {
    size_t widest = j.is_object() ? j.size() : 0;
    if (j.is_structured())
        for (const auto& v : j) widest = std::max(widest, widest_object(v));  // depth is bounded by the parser
    return widest;
}

// The body in member order, or nothing when `parsed` (its sorted parse) holds an object too
// wide to parse in order, or the body does not parse.
inline std::optional<nlohmann::ordered_json> ordered_body(const nlohmann::json& parsed, std::string_view body) {
    if (widest_object(parsed) > kMaxOrderedMembers) return std::nullopt;
    auto ordered = nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (ordered.is_discarded()) return std::nullopt;
    return ordered;
}

}  // namespace tdm::server
