/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/ordered_body.h: a request body parsed a second time with its objects' members
// in the client's order, for the parts where order shows: tool definitions in the prompt,
// a JSON schema's properties in the output. Not here: reading the fields (the request
// parsers take the ordinary, sorted parse).
//
// Why guarded: nlohmann::ordered_json finds a member by a linear scan, so an object of n
// members parses in O(n^2). A body whose objects (ignored fields count) would cost too much
// gets no ordered parse; the callers then keep the sorted order, which is as valid.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string_view>

namespace tdm::server {

// The work of an ordered parse, as the sum over objects of members squared; past this the
// body keeps its sorted order (a body of a few hundred 1000-member objects would otherwise
// cost 10^8 comparisons per parse).
inline constexpr size_t kMaxOrderedWork = size_t{4} << 20;

inline size_t ordered_parse_work(const nlohmann::json& j) {
    size_t work = j.is_object() ? j.size() * j.size() : 0;
    if (j.is_structured())
        for (const auto& v : j) {
            work += ordered_parse_work(v);  // depth is bounded by the request parser
            if (work > kMaxOrderedWork) break;
        }
    return work;
}

// The body in member order, or nothing when `parsed` (its sorted parse) holds objects too
// wide to parse in order, or the body does not parse.
inline std::optional<nlohmann::ordered_json> ordered_body(const nlohmann::json& parsed, std::string_view body) {
    if (ordered_parse_work(parsed) > kMaxOrderedWork) return std::nullopt;
    auto ordered = nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
    if (ordered.is_discarded()) return std::nullopt;
    return ordered;
}

}  // namespace tdm::server
