// SPDX-License-Identifier: Apache-2.0
// host/plugin/block_draft_ext.cpp: extension "tdm.block_draft" versions 1 and 2
// (tandem/ext/block_draft.h): declare() and declare_drafted_rows() during a draft head's
// create. They check their arguments and answer with a status and a message; they never
// throw or abort on a plugin's mistake.
#include "plugin/block_draft_ext.h"

#include <cstddef>

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

tdm_status refuse_drafted_rows(const std::string& why) {
    return set_last_error(TDM_ERR_INVALID_ARGUMENT, fmt::format("tdm.block_draft declare_drafted_rows: {}", why));
}

tdm_status api_declare_drafted_rows(tdm_draft_head_info* info) {
    if (!info) return refuse_drafted_rows("null draft head info");
    if (!(info->flags & TDM_DRAFT_HEAD_BLOCK)) return refuse_drafted_rows("called before declare()");
    if (BlockCreateScope* s = t_block_scope; s && s->info == info) {
        if (!s->result.declared) return refuse_drafted_rows("called before declare()");
        if (s->result.drafted_rows) return refuse_drafted_rows("called twice in one create");
        s->result.drafted_rows = true;
    }
    return TDM_OK;
}

const tdm_ext_block_draft kBlockDraftExt = {sizeof(tdm_ext_block_draft), api_declare, api_declare_drafted_rows};
// version 1's table: what a host of version 1 answered
const tdm_ext_block_draft kBlockDraftExtV1 = {offsetof(tdm_ext_block_draft, declare_drafted_rows), api_declare,
                                              nullptr};

}  // namespace

const tdm_ext_block_draft* block_draft_extension(uint32_t version) {
    return version >= 2 ? &kBlockDraftExt : &kBlockDraftExtV1;
}

BlockCreateScope::BlockCreateScope(const tdm_draft_head_info* i) : info(i), outer_(t_block_scope) { t_block_scope = this; }
BlockCreateScope::~BlockCreateScope() { t_block_scope = outer_; }

}  // namespace tdm
