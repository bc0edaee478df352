// SPDX-License-Identifier: Apache-2.0
// host/plugin/block_draft_ext.cpp: extension "tdm.block_draft" version 1
// (tandem/ext/block_draft.h): declare() during a draft head's create. It checks its
// arguments and answers with a status and a message; it never throws or aborts on a
// plugin's mistake.
#include "plugin/block_draft_ext.h"

#include <fmt/format.h>

#include "plugin/handles.h"

namespace tdm {
namespace {

thread_local BlockCreateScope* t_block_scope = nullptr;

tdm_status refuse_declare(const std::string& why) {
    return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("tdm.block_draft declare: {}", why));
}

tdm_status api_declare(tdm_draft_head_info* info, uint32_t block_size, int32_t mask_token) {
    if (!info) return refuse_declare("null draft head info");
    if (block_size < 2 || block_size > TDM_MAX_DRAFT_BLOCK)
        return refuse_declare(fmt::format("a block of {} rows; this host takes 2..{}", block_size, TDM_MAX_DRAFT_BLOCK));
    if (mask_token < 0) return refuse_declare(fmt::format("mask token {} is not a token id", mask_token));
    if (BlockCreateScope* s = t_block_scope; s && s->info == info) {
        if (s->result.declared) return refuse_declare("called twice in one create");
        s->result = {true, block_size, mask_token};
    }
    info->flags |= TDM_DRAFT_HEAD_BLOCK;
    return TDM_OK;
}

const tdm_ext_block_draft kBlockDraftExt = {sizeof(tdm_ext_block_draft), api_declare};

}  // namespace

const tdm_ext_block_draft* block_draft_extension() { return &kBlockDraftExt; }

BlockCreateScope::BlockCreateScope(const tdm_draft_head_info* i) : info(i), outer_(t_block_scope) { t_block_scope = this; }
BlockCreateScope::~BlockCreateScope() { t_block_scope = outer_; }

}  // namespace tdm
