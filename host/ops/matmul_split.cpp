// SPDX-License-Identifier: Apache-2.0
// host/ops/matmul_split.cpp: the matmul layouts and work splits (matmul_split.h).
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

bool has_mv_kernel(DType type) { return vk::find_shader(kernel::weight_variant("matmul_mv", type, false)) != nullptr; }

}  // namespace

std::string MatmulSplit::to_string() const {
    return layout == MatmulLayout::mv ? fmt::format("{}x{}u{}", rows, subgroups, unroll)
                                      : fmt::format("{}x{}", rows, subgroups);
}

std::string MatmulSplit::shader(bool group) const {
    const char* base = layout == MatmulLayout::mv ? "matmul_mv" : layout == MatmulLayout::rl ? "matmul_rl" : "matmul";
    return group ? std::string(base) + "_group" : std::string(base);
}

uint32_t MatmulSplit::rows_per_workgroup(uint32_t subgroup_size) const {
    return layout == MatmulLayout::rl ? subgroup_size * subgroups * rows : rows * subgroups;
}

std::vector<uint32_t> MatmulSplit::spec(uint32_t subgroup_size, uint32_t tokens_per_pass) const {
    std::vector<uint32_t> s{subgroup_size * subgroups, tokens_per_pass, rows};
    if (layout == MatmulLayout::mv) s.push_back(unroll);
    return s;
}

vk::SubgroupShape MatmulSplit::subgroup_shape() const {
    return layout == MatmulLayout::rl ? vk::SubgroupShape::any : vk::SubgroupShape::device_size;
}

Result<const vk::Pipeline*> matmul_pipeline(vk::PipelineManager& pipelines, const vk::DeviceCaps& caps,
                                            const MatmulSplit& s, DType type, bool texel, bool group,
                                            uint32_t tokens_per_pass) {
    const uint32_t sg = std::max<uint32_t>(1, caps.subgroup_size);
    return pipelines.get(kernel::weight_variant(s.shader(group), type, texel), s.spec(sg, tokens_per_pass),
                         s.subgroup_shape());
}

std::vector<uint32_t> MatmulSplit::table_values() const {
    if (layout == MatmulLayout::mv) return {rows, subgroups, unroll};
    return {rows, subgroups};
}

MatmulLayout matmul_layout(const vk::DeviceCaps& caps, DType type) {
    const char* e = std::getenv("TANDEM_MATMUL_LAYOUT");
    const std::string_view forced = e ? e : "";
    if (forced == "rl") return MatmulLayout::rl;
    if (forced == "ks") return MatmulLayout::ks;
    if (forced != "mv" && caps.is_cpu()) return MatmulLayout::rl;
    // "mv" and "ks" need the subgroup size they divide by (matmul_split.h); forced, they
    // fail on such a device with a message naming it
    if (forced != "mv" && !caps.subgroup_size_fixable) return MatmulLayout::rl;
    return has_mv_kernel(type) ? MatmulLayout::mv : MatmulLayout::ks;
}

// Rows per lane in "rl": 8. Against 4, on a whole 0.6B-shape model on lavapipe, decode
// measured 1.08-1.35x faster, prefill 1.04-1.12x, verify passes mostly faster
// (docs/perf-notes/lavapipe-matmul.md, "Rows per lane"), for about a sixth more compile
// time on a cold cache. "ks" keeps the split it had before tuning existed (8 rows per
// subgroup, 8 subgroups). "mv": 2 rows per subgroup, 2 subgroups, 2 units in flight per
// lane, so a 1024-row matrix runs in 256 workgroups (64 or 128 lanes each) and R = 2 rows
// share each fetched piece of x; `tandem tune` finds a better one per shape on a GPU.
MatmulSplit default_matmul_split(const vk::DeviceCaps& caps, DType type) {
    MatmulSplit s{MatmulLayout::ks, 8, 8, 1};
    switch (matmul_layout(caps, type)) {
        case MatmulLayout::rl: return {MatmulLayout::rl, 8, 1, 1};
        case MatmulLayout::mv: s = {MatmulLayout::mv, 2, 2, 2}; break;
        case MatmulLayout::ks: break;
    }
    // within what a fixed subgroup size allows (the rows' bits are the same for any count)
    if (caps.max_compute_workgroup_subgroups) s.subgroups = std::min(s.subgroups, caps.max_compute_workgroup_subgroups);
    return s;
}

bool matmul_split_fits(const vk::DeviceCaps& caps, const MatmulSplit& s) {
    const uint32_t sg = std::max<uint32_t>(1, caps.subgroup_size);
    const uint32_t max_inv = caps.max_workgroup_invocations ? caps.max_workgroup_invocations : 256;
    const uint32_t max_unroll = s.layout == MatmulLayout::mv ? 8 : 1;
    // a fixed subgroup size bounds the subgroups of a workgroup
    const uint32_t max_subgroups = s.subgroup_shape() == vk::SubgroupShape::device_size &&
                                           caps.max_compute_workgroup_subgroups
                                       ? caps.max_compute_workgroup_subgroups
                                       : UINT32_MAX;
    return s.rows >= 1 && s.rows <= 16 && s.subgroups >= 1 && s.subgroups <= max_subgroups &&
           sg * s.subgroups <= max_inv && s.unroll >= 1 && s.unroll <= max_unroll;
}

std::vector<MatmulSplit> matmul_split_candidates(const vk::DeviceCaps& caps, DType type) {
    const MatmulSplit d = default_matmul_split(caps, type);
    std::vector<MatmulSplit> out{d};
    auto add = [&](const MatmulSplit& s) {
        if (matmul_split_fits(caps, s) && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    };
    // "mv": 1, 2 or 4 rows per subgroup times 1, 2 or 4 subgroups at the default unroll,
    // then the unroll (1, 4) at the default rows and subgroups: 11 candidates rather than
    // the 27 of every combination, which would triple the time a model's first load spends
    // tuning. "ks" on a GPU: from one row per subgroup (many workgroups: every SM busy on a
    // 1k-row matrix) to today's 8 x 8. "rl" on a CPU: a lane's rows and the workgroup's
    // subgroups, where lavapipe pays per workgroup.
    if (d.layout == MatmulLayout::mv) {
        for (uint32_t r : {1u, 2u, 4u})
            for (uint32_t g : {1u, 2u, 4u}) add({d.layout, r, g, d.unroll});
        for (uint32_t u : {1u, 4u}) add({d.layout, d.rows, d.subgroups, u});
        return out;
    }
    const bool rl = d.layout == MatmulLayout::rl;
    const std::vector<uint32_t> rows = rl ? std::vector<uint32_t>{2, 4, 8} : std::vector<uint32_t>{1, 2, 4, 8};
    const std::vector<uint32_t> groups = rl ? std::vector<uint32_t>{1, 2} : std::vector<uint32_t>{1, 2, 4, 8};
    for (uint32_t r : rows)
        for (uint32_t g : groups) add({d.layout, r, g, 1});
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
    const MatmulSplit d = default_matmul_split(caps, w.type());
    return fmt::format("{} {}x{}", kernel::weight_variant(d.shader(false), w.type(), texel), w.rows(), w.cols());
}

MatmulSplit matmul_split(const vk::DeviceCaps& caps, const vk::WorkSplits& table, const DeviceWeight& w) {
    MatmulSplit s = default_matmul_split(caps, w.type());
    if (table.size() > 0) {
        if (auto v = table.find(matmul_split_key(caps, w)); v && v->size() == s.table_values().size()) {
            MatmulSplit t = s;
            t.rows = (*v)[0];
            t.subgroups = (*v)[1];
            if (v->size() > 2) t.unroll = (*v)[2];
            if (matmul_split_fits(caps, t)) s = t;  // a table from another driver version may not
        }
    }
    s.rows = env_or("TANDEM_MATMUL_ROWS", s.rows);
    s.subgroups = env_or("TANDEM_MATMUL_SUBGROUPS", s.subgroups);
    if (s.layout == MatmulLayout::mv) s.unroll = env_or("TANDEM_MATMUL_UNROLL", s.unroll);
    return s;
}

}  // namespace tdm
