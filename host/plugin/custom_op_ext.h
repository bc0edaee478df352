/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/custom_op_ext.h: the host's side of extension "tdm.custom_op"
// (tandem/ext/custom_op.h): its static function table, which
// tdm_host_api.get_extension hands out (plugin/capabilities.cpp).
#pragma once

#include <tandem/ext/custom_op.h>

namespace tdm {

const tdm_ext_custom_op* custom_op_extension();

}  // namespace tdm
