// SPDX-License-Identifier: Apache-2.0
// host/serve/drafter_choice.cpp
#include "serve/drafter_choice.h"

#include <algorithm>

#include <fmt/format.h>

namespace tdm {

namespace {

// The names the drafter `i` of the chain answers to: its own first, then the others.
std::vector<std::string> names_of(std::span<Drafter* const> order, std::span<const std::vector<std::string>> types,
                                  size_t i) {
    std::vector<std::string> names = {spec_type_key(order[i]->name())};
    if (i < types.size())
        for (const std::string& t : types[i]) {
            const std::string key = spec_type_key(t);
            if (std::find(names.begin(), names.end(), key) == names.end()) names.push_back(key);
        }
    return names;
}

std::string trimmed(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return std::string(s);
}

}  // namespace

std::string loaded_drafter_names(std::span<Drafter* const> order, std::span<const std::vector<std::string>> types) {
    std::string out;
    for (size_t i = 0; i < order.size(); ++i) {
        const std::vector<std::string> names = names_of(order, types, i);
        out += (out.empty() ? "" : ", ") + names[0];
        if (names.size() > 1)
            out += fmt::format(" (also {})", fmt::join(names.begin() + 1, names.end(), ", "));
    }
    return out;
}

Result<std::vector<size_t>> choose_drafters(std::span<Drafter* const> order,
                                            std::span<const std::vector<std::string>> types,
                                            std::string_view request_type) {
    const auto loaded = [&] {
        return order.empty() ? std::string("it runs without drafters") : "loaded: " + loaded_drafter_names(order, types);
    };
    std::vector<size_t> picks;
    size_t start = 0;
    while (start <= request_type.size()) {
        const size_t comma = std::min(request_type.find(',', start), request_type.size());
        const std::string name = trimmed(request_type.substr(start, comma - start));
        start = comma + 1;
        if (name.empty()) return Error::format("'{}' names no drafter between two commas", request_type);
        size_t found = order.size();
        for (size_t i = 0; i < order.size() && found == order.size(); ++i) {
            const std::vector<std::string> names = names_of(order, types, i);
            if (std::find(names.begin(), names.end(), spec_type_key(name)) != names.end()) found = i;
        }
        if (found == order.size())
            return Error::format("drafter '{}' is not loaded in this server ({})", name, loaded());
        if (std::find(picks.begin(), picks.end(), found) != picks.end())
            return Error::format("'{}' names the drafter {} twice", request_type, spec_type_key(order[found]->name()));
        picks.push_back(found);
    }
    return picks;
}

}  // namespace tdm
