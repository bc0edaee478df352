/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/capabilities.h: what the host can do, as plugins ask it during
// init (tdm_host_api.query_op, query_weight_type, get_limits, get_extension).
// The answers come from the op table (host/ops/), so a query and graph_op can
// never disagree.
#pragma once

#include <tandem/tandem.h>

#include <string_view>

namespace tdm {

// The host's limits (tandem.h tdm_host_limits), filled for a struct of
// `out->struct_size` bytes (fields past it are not written).
tdm_status host_limits(tdm_host_limits* out);

// TDM_OK if graph_op would accept `desc->op` with these parameters (inputs are
// not looked at); otherwise a status and set_last_error() naming the op and
// the parameter.
tdm_status query_op_params(const tdm_op_desc& desc);

// TDM_OK if weights of `type` can feed `op` (matmul, get_rows, matmul_id).
tdm_status query_weight_type(tdm_dtype type, uint32_t op);

// A named extension's static function table, or nullptr (set_last_error()
// says which versions exist). *version gets the version offered.
const void* find_extension(std::string_view name, uint32_t min_version, uint32_t* version);

}  // namespace tdm
