/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/block_draft_ext.h: the host's side of extension "tdm.block_draft"
// (tandem/ext/block_draft.h): its function table and how the host learns what a head's
// create declared (the create scope below).
// Not here: running a block head's rounds (speculative/draft_head.cpp).
#pragma once

#include <tandem/ext/block_draft.h>

#include <cstdint>

namespace tdm {

// Extension "tdm.block_draft": the table of `version` (1 or 2; version 1's lacks
// declare_drafted_rows and says so in its struct_size).
const tdm_ext_block_draft* block_draft_extension(uint32_t version);

// What a head's create declared through declare().
struct DeclaredBlock {
    bool declared = false;
    uint32_t size = 0;
    int32_t mask_token = 0;
    bool drafted_rows = false;  // declare_drafted_rows() [version 2]: outputs for the drafts only
};

// While one lives, declare() calls with `info` on this thread are recorded in result.
// The host opens one around each draft head create.
class BlockCreateScope {
public:
    explicit BlockCreateScope(const tdm_draft_head_info* info);
    ~BlockCreateScope();
    BlockCreateScope(const BlockCreateScope&) = delete;
    BlockCreateScope& operator=(const BlockCreateScope&) = delete;

    const tdm_draft_head_info* info;
    DeclaredBlock result;

private:
    BlockCreateScope* outer_;
};

}  // namespace tdm
