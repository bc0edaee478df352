// SPDX-License-Identifier: Apache-2.0
// host/plugin/drafter_branches_ext.cpp: extension "tdm.drafter_branches" version 1: a
// plugin's drafter hands over its propose_branches callback during init.
#include "plugin/drafter_branches_ext.h"

#include "plugin/abi_structs.h"
#include "plugin/handles.h"
#include "plugin/registry.h"

namespace tdm {
namespace {

tdm_status api_set_propose_branches(tdm_registry* reg, const char* drafter_name, tdm_propose_branches_fn fn) {
    if (!reg) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "tdm.drafter_branches set_propose_branches outside init");
    if (!fn) return set_last_error(TDM_ERR_INVALID_ARGUMENT, "tdm.drafter_branches set_propose_branches: null callback");
    auto name = plugin_name(drafter_name, "tdm.drafter_branches set_propose_branches");
    if (!name.ok()) return set_last_error(name.error());
    if (auto st = reg->registry->set_propose_branches(reg->plugin, *name, fn); !st.ok())
        return set_last_error(st.error());
    return TDM_OK;
}

const tdm_ext_drafter_branches kDrafterBranchesExt = {sizeof(tdm_ext_drafter_branches), api_set_propose_branches};

}  // namespace

const tdm_ext_drafter_branches* drafter_branches_extension() { return &kDrafterBranchesExt; }

}  // namespace tdm
