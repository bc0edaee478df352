// SPDX-License-Identifier: Apache-2.0
// host/engine/stop_reason.cpp: the words of StopReason.
#include "engine/stop_reason.h"

namespace tdm {

std::string_view to_string(StopReason reason) {
    switch (reason) {
        case StopReason::length: return "length";
        case StopReason::eog: return "eog";
        case StopReason::stop_token: return "stop_token";
        case StopReason::context: return "context";
        case StopReason::cancelled: return "cancelled";
        case StopReason::error: return "error";
        case StopReason::constraint: return "constraint";
    }
    return "error";
}

}  // namespace tdm
