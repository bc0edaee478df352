/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/matmul_split.h: how TDM_OP_MATMUL divides a weight's rows among lanes,
// subgroups and workgroups, per device and per weight shape.
//
// Two layouts (shaders/matmul.comp "ks", shaders/matmul_rl.comp "rl"; matmul.cpp says
// which device gets which). Within a layout, `rows` (rows per subgroup in "ks", per lane
// in "rl") and `subgroups` (per workgroup) only decide which workgroup computes which
// rows: a row's sum runs in the same order whatever they are, so every split of a layout
// gives the same bits (tests/ops/matmul_split_test.cpp) and the choice may depend on the
// device and the weight's shape, never on the batch width. The fastest split per shape is
// measured by `tandem tune` (bench/matmul_tune.h) and kept in the device's work-split
// table (vk/work_splits.h).
// Which split a matmul uses: TANDEM_MATMUL_ROWS / TANDEM_MATMUL_SUBGROUPS if set
// (experiments), else the table's entry for the weight's shape, else the layout's default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/weight.h"
#include "vk/device.h"
#include "vk/work_splits.h"

namespace tdm {

struct MatmulSplit {
    bool rows_per_lane = false;  // layout "rl" (true) or "ks"
    uint32_t rows = 8;           // R: rows per subgroup ("ks") or per lane ("rl")
    uint32_t subgroups = 8;      // subgroups per workgroup

    bool operator==(const MatmulSplit&) const = default;
    std::string to_string() const;  // "2x4": rows x subgroups
};

// The layout this device's matmuls use (TANDEM_MATMUL_LAYOUT=rl|ks overrides) with its
// default split.
MatmulSplit default_matmul_split(const vk::DeviceCaps& caps);
// Whether a split can run here (its workgroup fits the device's limits).
bool matmul_split_fits(const vk::DeviceCaps& caps, const MatmulSplit& s);
// The splits `tandem tune` times on this device, the default first.
std::vector<MatmulSplit> matmul_split_candidates(const vk::DeviceCaps& caps);
// The table key of a weight's matmul: "<kernel variant> <rows>x<cols>".
std::string matmul_split_key(const vk::DeviceCaps& caps, const DeviceWeight& w);
// The split a matmul of `w` uses on this device (see the top of this file).
MatmulSplit matmul_split(const vk::DeviceCaps& caps, const vk::WorkSplits& table, const DeviceWeight& w);
// Whether a weight is one TDM_OP_MATMUL reads as a whole matrix (2-D, a matmul type).
bool matmul_tunable(const DeviceWeight& w);

}  // namespace tdm
