// SPDX-License-Identifier: Apache-2.0
// host/ops/matmul_split.cpp: the matmul work splits (matmul_split.h).
#include "ops/matmul_split.h"

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "ops/weight_record.h"
#include "vk/pipeline.h"

namespace tdm {
namespace {

uint32_t env_or(const char* name, uint32_t dflt) {
    const char* e = std::getenv(name);
    return e && std::atoi(e) > 0 ? uint32_t(std::atoi(e)) : dflt;
}

bool layout_rows_per_lane(const vk::DeviceCaps& caps) {
    const char* e = std::getenv("TANDEM_MATMUL_LAYOUT");
    return e ? std::string_view(e) == "rl" : caps.is_cpu();
}

}  // namespace

std::string MatmulSplit::to_string() const { return fmt::format("{}x{}", rows, subgroups); }

// Rows per lane in "rl": 8. Against 4, on a whole 0.6B-shape model on lavapipe, decode
// measured 1.08-1.35x faster, prefill 1.04-1.12x, verify passes mostly faster
// (docs/perf-notes/lavapipe-matmul.md, "Rows per lane"), for about a sixth more compile
// time on a cold cache. "ks" keeps the split it had before tuning existed (8 rows per
// subgroup, 8 subgroups): `tandem tune` finds a better one per shape on a GPU.
MatmulSplit default_matmul_split(const vk::DeviceCaps& caps) {
    return layout_rows_per_lane(caps) ? MatmulSplit{true, 8, 1} : MatmulSplit{false, 8, 8};
}

bool matmul_split_fits(const vk::DeviceCaps& caps, const MatmulSplit& s) {
    const uint32_t sg = std::max<uint32_t>(1, caps.subgroup_size);
    const uint32_t max_inv = caps.max_workgroup_invocations ? caps.max_workgroup_invocations : 256;
    return s.rows >= 1 && s.rows <= 16 && s.subgroups >= 1 && sg * s.subgroups <= max_inv;
}

std::vector<MatmulSplit> matmul_split_candidates(const vk::DeviceCaps& caps) {
    const MatmulSplit d = default_matmul_split(caps);
    std::vector<MatmulSplit> out{d};
    // "ks" on a GPU: from one row per subgroup (many workgroups: every SM busy on a
    // 1k-row matrix) to today's 8 x 8. "rl" on a CPU: a lane's rows and the workgroup's
    // subgroups, where lavapipe pays per workgroup.
    const std::vector<uint32_t> rows = d.rows_per_lane ? std::vector<uint32_t>{2, 4, 8} : std::vector<uint32_t>{1, 2, 4, 8};
    const std::vector<uint32_t> groups = d.rows_per_lane ? std::vector<uint32_t>{1, 2} : std::vector<uint32_t>{1, 2, 4, 8};
    for (uint32_t r : rows)
        for (uint32_t g : groups) {
            const MatmulSplit s{d.rows_per_lane, r, g};
            if (s != d && matmul_split_fits(caps, s)) out.push_back(s);
        }
    return out;
}

// Norm and bias vectors (one row), expert stacks (3-D: matmul_id) and host tables are not
// read by TDM_OP_MATMUL as a matrix; nor are types it has no kernel for.
bool matmul_tunable(const DeviceWeight& w) {
    return !w.in_host_memory() && !w.chunks().empty() && w.ne()[2] == 1 && w.ne()[3] == 1 && w.rows() >= 64 &&
           vk::find_shader(kernel::weight_variant("matmul", w.type(), false)) != nullptr;
}

std::string matmul_split_key(const vk::DeviceCaps& caps, const DeviceWeight& w) {
    const bool texel = caps.prefer_texel_weights && w.has_texel_views();
    return fmt::format("{} {}x{}", kernel::weight_variant(layout_rows_per_lane(caps) ? "matmul_rl" : "matmul", w.type(), texel),
                       w.rows(), w.cols());
}

MatmulSplit matmul_split(const vk::DeviceCaps& caps, const vk::WorkSplits& table, const DeviceWeight& w) {
    MatmulSplit s = default_matmul_split(caps);
    if (table.size() > 0) {
        if (auto v = table.find(matmul_split_key(caps, w)); v && v->size() == 2) {
            const MatmulSplit t{s.rows_per_lane, (*v)[0], (*v)[1]};
            if (matmul_split_fits(caps, t)) s = t;  // a table from another driver version may not
        }
    }
    s.rows = env_or("TANDEM_MATMUL_ROWS", s.rows);
    s.subgroups = env_or("TANDEM_MATMUL_SUBGROUPS", s.subgroups);
    return s;
}

}  // namespace tdm
