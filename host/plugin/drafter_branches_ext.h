/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/drafter_branches_ext.h: the host's side of extension "tdm.drafter_branches"
// (tandem/ext/drafter_branches.h): its static function table, which
// tdm_host_api.get_extension hands out (plugin/capabilities.cpp). Not here: what the host
// does with branches (speculative/branch_tree.h, speculative/plugin_drafter.h).
#pragma once

#include <tandem/ext/drafter_branches.h>

namespace tdm {

const tdm_ext_drafter_branches* drafter_branches_extension();

}  // namespace tdm
