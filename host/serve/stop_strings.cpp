// SPDX-License-Identifier: Apache-2.0
// host/serve/stop_strings.cpp
#include "serve/stop_strings.h"

#include <algorithm>

namespace tdm::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
    for (std::string& s : stops)
        if (!s.empty()) stops_.push_back(std::move(s));
}

std::string StopMatcher::push(std::string_view piece) {
    if (stopped_) return {};
    pending_.append(piece);

    // The earliest occurrence of any stop string; at one position the longest string wins
    // (so that "END" and "ENDING" both stop at the same place, reporting the longer).
    size_t first = std::string::npos;
    for (const std::string& s : stops_) {
        const size_t at = pending_.find(s);
        if (at == std::string::npos) continue;
        if (at < first || (at == first && s.size() > matched_.size())) {
            first = at;
            matched_ = s;
        }
    }
    if (first != std::string::npos) {
        stopped_ = true;
        std::string out = pending_.substr(0, first);
        pending_.clear();
        return out;
    }

    // Hold back the longest tail of the text that is a proper prefix of a stop string.
    size_t keep = 0;
    for (const std::string& s : stops_) {
        const size_t longest = std::min(s.size() - 1, pending_.size());
        for (size_t n = longest; n > keep; --n) {
            if (std::string_view(pending_).substr(pending_.size() - n) == std::string_view(s).substr(0, n)) {
                keep = n;
                break;
            }
        }
    }
    std::string out = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return out;
}

std::string StopMatcher::flush() {
    std::string out = std::move(pending_);
    pending_.clear();
    return out;
}

}  // namespace tdm::server
