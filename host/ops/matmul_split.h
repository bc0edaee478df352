/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/matmul_split.h: how TDM_OP_MATMUL divides a weight's rows among lanes,
// subgroups and workgroups, per device and per weight shape.
//
// Three layouts, one shader each: "mv" (shaders/matmul_mv.comp, the mat-vec kernel for
// GPUs), "ks" (shaders/matmul.comp, the GPUs' kernel before mv, kept for the types mv has
// no variant of) and "rl" (shaders/matmul_rl.comp, CPU devices such as lavapipe). Which
// layout a matmul uses depends on the device and the weight type only (matmul_layout),
// never on the batch. Within a layout, `rows` (rows per subgroup in "mv" and "ks", per lane
// in "rl"), `subgroups` (per workgroup) and `unroll` ("mv": units in flight per lane) only
// decide which workgroup computes which rows and how far ahead a lane loads: a row's sum
// runs in the same order whatever they are, so every split of a layout gives the same bits
// (tests/ops/matmul_split_test.cpp) and the choice may depend on the device and the
// weight's shape, never on the batch width. The fastest split per shape is measured by
// `tandem tune` (bench/matmul_tune.h) and kept in the device's work-split table
// (vk/work_splits.h).
// Which split a matmul uses: TANDEM_MATMUL_ROWS / TANDEM_MATMUL_SUBGROUPS /
// TANDEM_MATMUL_UNROLL if set (experiments), else the table's entry for the weight's shape,
// else the layout's default.
// "mv" and "ks" count their rows in subgroups and stride a row's units over a subgroup's
// lanes, both by the device's reported subgroup size, so their pipelines fix that size in
// full subgroups (vk/pipeline.h, SubgroupShape); a GPU that cannot fix it runs "rl", whose
// rows and sums do not depend on subgroups (a layout is still a function of the device).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/weight.h"
#include "vk/device.h"
#include "vk/pipeline.h"
#include "vk/work_splits.h"

namespace tdm {

enum class MatmulLayout : uint8_t { ks, rl, mv };

struct MatmulSplit {
    MatmulLayout layout = MatmulLayout::ks;
    uint32_t rows = 8;       // R: rows per subgroup ("ks", "mv") or per lane ("rl")
    uint32_t subgroups = 8;  // subgroups per workgroup
    uint32_t unroll = 1;     // units a lane loads ahead ("mv"; 1 in the other layouts)

    bool operator==(const MatmulSplit&) const = default;
    std::string to_string() const;  // "2x4" (rows x subgroups), "2x4u2" in "mv"
    // The shader family: "matmul_mv", "matmul" or "matmul_rl" (with group: the GROUP one).
    std::string shader(bool group) const;
    // Output rows one workgroup computes on a device with `subgroup_size` lanes per subgroup.
    uint32_t rows_per_workgroup(uint32_t subgroup_size) const;
    // The shader's specialization constants for `tokens_per_pass` tokens.
    std::vector<uint32_t> spec(uint32_t subgroup_size, uint32_t tokens_per_pass) const;
    // The values a work-split table keeps: rows, subgroups[, unroll].
    std::vector<uint32_t> table_values() const;
    // How the kernel's lanes must form subgroups: the device's size, whole, in "mv" and "ks".
    vk::SubgroupShape subgroup_shape() const;
};

// The layout a matmul of `type` uses on this device: TANDEM_MATMUL_LAYOUT=rl|ks|mv if set,
// else "rl" on CPU devices and on devices that cannot fix their subgroup size, "mv"
// elsewhere; "ks" where the type has no "mv" kernel.
MatmulLayout matmul_layout(const vk::DeviceCaps& caps, DType type);
// The layout's default split for `type` on this device.
MatmulSplit default_matmul_split(const vk::DeviceCaps& caps, DType type);
// Whether a split can run here (its workgroup fits the device's limits).
bool matmul_split_fits(const vk::DeviceCaps& caps, const MatmulSplit& s);
// The splits `tandem tune` times for `type` on this device, the default first.
std::vector<MatmulSplit> matmul_split_candidates(const vk::DeviceCaps& caps, DType type);
// The table key of a weight's matmul: "<kernel variant> <rows>x<cols>".
std::string matmul_split_key(const vk::DeviceCaps& caps, const DeviceWeight& w);
// The split a matmul of `w` uses on this device (see the top of this file).
MatmulSplit matmul_split(const vk::DeviceCaps& caps, const vk::WorkSplits& table, const DeviceWeight& w);
// The pipeline of split `s`'s kernel for weights of `type` (group: the GROUP variant of up to
// three weights) at `tokens_per_pass` tokens, with the subgroups the split counts on.
Result<const vk::Pipeline*> matmul_pipeline(vk::PipelineManager& pipelines, const vk::DeviceCaps& caps,
                                            const MatmulSplit& s, DType type, bool texel, bool group,
                                            uint32_t tokens_per_pass);
// Whether a weight is one TDM_OP_MATMUL reads as a whole matrix (2-D, a matmul type).
bool matmul_tunable(const DeviceWeight& w);

}  // namespace tdm
