/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/bench_common.h: what the `tandem bench` benchmarks and `tandem demo` share (cmd_bench.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "cli/commands.h"

namespace tdm::cli {

double now_s();  // a steady clock, in seconds
uint64_t peak_rss_bytes();
double median(std::vector<double> v);  // 0 for none; the mean of the middle two for an even count
// `len` random ids of ordinary text tokens (below the specials at the end of a synthetic
// vocabulary), reproducibly from `seed`.
std::vector<int32_t> bench_prompt(const Model& model, uint32_t len, uint64_t seed);

Status bench_serve(App& app);  // cmd_bench_serve.cpp
Status bench_image(App& app);  // cmd_bench_image.cpp

}  // namespace tdm::cli
