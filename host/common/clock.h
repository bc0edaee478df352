/* SPDX-License-Identifier: Apache-2.0 */
// host/common/clock.h: the one clock the engine and the speculative round time their steps
// with (a steady clock, in milliseconds since an arbitrary epoch: only differences mean
// anything).
#pragma once

#include <chrono>

namespace tdm {

inline double steady_now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace tdm
