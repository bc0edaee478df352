// SPDX-License-Identifier: Apache-2.0
// tests/plugin/block_draft_ext_test.cpp: extension tdm.block_draft as a plugin meets it:
// declare() sets TDM_DRAFT_HEAD_BLOCK, is recorded for the create the host has open (and
// only checked otherwise), once per create, and refuses blocks of fewer than 2 or more than
// TDM_MAX_DRAFT_BLOCK rows and negative mask tokens, each with a message. Version 2's
// declare_drafted_rows() is recorded after declare() only, once; a host held back to version 1
// (TANDEM_HIDE_EXTENSIONS=tdm.block_draft@1) answers with version 1's table, which lacks it.
// (End to end with a head and a target: tests/models/dflash/.)
#include <gtest/gtest.h>

#include "plugin/block_draft_ext.h"
#include "plugin/handles.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const tdm_ext_block_draft& block_ext() {
    uint32_t version = 0;
    auto e = static_cast<const tdm_ext_block_draft*>(
        host_api()->get_extension(TDM_EXT_BLOCK_DRAFT, TDM_EXT_BLOCK_DRAFT_VERSION, &version));
    EXPECT_NE(e, nullptr);
    EXPECT_EQ(version, TDM_EXT_BLOCK_DRAFT_VERSION);
    return *e;
}

TEST(BlockDraftExt, declare_sets_the_flag_and_is_recorded_once_for_the_create_the_host_has_open) {
    tdm_draft_head_info info{}, other{};
    EXPECT_EQ(block_ext().declare(&other, 16, 5), TDM_OK) << "outside a create: checked, not recorded";
    EXPECT_EQ(other.flags, TDM_DRAFT_HEAD_BLOCK);
    BlockCreateScope scope(&info);
    EXPECT_EQ(block_ext().declare(&info, 16, 151669), TDM_OK);
    EXPECT_EQ(info.flags, TDM_DRAFT_HEAD_BLOCK);
    EXPECT_TRUE(scope.result.declared);
    EXPECT_EQ(scope.result.size, 16u);
    EXPECT_EQ(scope.result.mask_token, 151669);
    EXPECT_EQ(block_ext().declare(&info, 8, 3), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(host_api()->last_error()).find("called twice in one create"), std::string::npos);
    EXPECT_EQ(scope.result.size, 16u);
}

TEST(BlockDraftExt, declare_refuses_blocks_outside_two_to_the_maximum_and_negative_mask_tokens) {
    tdm_draft_head_info info{};
    EXPECT_EQ(block_ext().declare(&info, 1, 5), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(host_api()->last_error()).find("a block of 1 rows; this host takes 2..64"),
              std::string::npos)
        << host_api()->last_error();
    EXPECT_EQ(block_ext().declare(&info, TDM_MAX_DRAFT_BLOCK + 1, 5), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(block_ext().declare(&info, 2, -1), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(host_api()->last_error()).find("mask token -1"), std::string::npos);
    EXPECT_EQ(block_ext().declare(nullptr, 4, 1), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_EQ(info.flags, 0u) << "a refused declare sets nothing";
    EXPECT_EQ(block_ext().declare(&info, TDM_MAX_DRAFT_BLOCK, 0), TDM_OK);
}

TEST(BlockDraftExt, declare_drafted_rows_is_recorded_after_declare_once_per_create) {
    const tdm_ext_block_draft& ext = block_ext();
    ASSERT_TRUE(TDM_HAS_MEMBER(&ext, tdm_ext_block_draft, declare_drafted_rows));
    tdm_draft_head_info info{};
    BlockCreateScope scope(&info);
    EXPECT_EQ(ext.declare_drafted_rows(&info), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(host_api()->last_error()).find("declare_drafted_rows: called before declare()"),
              std::string::npos)
        << host_api()->last_error();
    EXPECT_FALSE(scope.result.drafted_rows);
    EXPECT_EQ(ext.declare(&info, 16, 5), TDM_OK);
    EXPECT_FALSE(scope.result.drafted_rows) << "a block head takes every block row's outputs unless it asks";
    EXPECT_EQ(ext.declare_drafted_rows(&info), TDM_OK);
    EXPECT_TRUE(scope.result.drafted_rows);
    EXPECT_EQ(ext.declare_drafted_rows(&info), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(host_api()->last_error()).find("called twice in one create"), std::string::npos);
    EXPECT_EQ(ext.declare_drafted_rows(nullptr), TDM_ERR_INVALID_ARGUMENT);
}

TEST(BlockDraftExt, a_host_held_back_to_version_1_answers_with_version_1s_table) {
    const test::ScopedEnv v1("TANDEM_HIDE_EXTENSIONS", "tdm.block_draft@1");
    uint32_t version = 0;
    const auto* e = static_cast<const tdm_ext_block_draft*>(host_api()->get_extension(TDM_EXT_BLOCK_DRAFT, 1, &version));
    ASSERT_NE(e, nullptr) << host_api()->last_error();
    EXPECT_EQ(version, 1u);
    EXPECT_FALSE(TDM_HAS_MEMBER(e, tdm_ext_block_draft, declare_drafted_rows));
    EXPECT_NE(e->declare, nullptr);
    EXPECT_EQ(host_api()->get_extension(TDM_EXT_BLOCK_DRAFT, 2, &version), nullptr);
    EXPECT_NE(std::string(host_api()->last_error()).find("version 2 or later asked for, this host offers version 1"),
              std::string::npos)
        << host_api()->last_error();
}

}  // namespace
}  // namespace tdm
