/* SPDX-License-Identifier: Apache-2.0 */
// host/ops/custom_op.h: a plugin's SPIR-V op (extension "tdm.custom_op",
// tandem/ext/custom_op.h): the host's copy of its descriptor and SPIR-V, checked
// once when the plugin creates it. The plugin's record owns it until unload
// (host/plugin/registry.h); graphs refer to it through TDM_OP_CUSTOM
// (ops/custom.cpp), and the pipeline manager compiles it at first use.
// Not here: the extension's C entry point (plugin/custom_op_ext.cpp).
#pragma once

#include <tandem/ext/custom_op.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/dtype.h"
#include "common/error.h"

namespace tdm {

struct CustomOp {
    static constexpr uint32_t kMagic = 0x43555354;  // "CUST": tells a handle from a stray pointer
    uint32_t magic = kMagic;
    uint64_t uid = 0;  // unique for the process's life: the pipeline cache key (addresses get reused)
    std::string name;  // "myplugin.gate"
    std::string entry_point;
    std::vector<uint32_t> spirv;
    uint32_t n_inputs = 0;
    uint32_t local_size_x = 64;
    tdm_custom_dispatch dispatch = TDM_CUSTOM_DISPATCH_ELEMENTS;
    tdm_custom_output_shape output_shape = TDM_CUSTOM_OUTPUT_LIKE_INPUT0;
    DType output_type = DType::F32;
    uint32_t n_int_params = 0, n_float_params = 0;

    // 32-bit words of the push-constant block (custom_op.h): the output's rows,
    // cols, offset, stride; offset, stride, cols per input; the params.
    uint32_t push_words() const { return 4 + 3 * n_inputs + n_int_params + n_float_params; }
};

// Checks a descriptor (already read append-safely: fields past the plugin's
// struct_size are zero) and its SPIR-V interface; the error names the op and
// what is wrong, with its tdm_status in Error::code().
Result<std::unique_ptr<CustomOp>> make_custom_op(const tdm_custom_op_desc& desc);

inline const tdm_custom_op* to_handle(const CustomOp* op) { return reinterpret_cast<const tdm_custom_op*>(op); }
inline const CustomOp* from_handle(const tdm_custom_op* op) { return reinterpret_cast<const CustomOp*>(op); }

}  // namespace tdm
