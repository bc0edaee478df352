// SPDX-License-Identifier: Apache-2.0
// tests/cli/drafter_weight_check_test.cpp: drafters' weights follow the target's NaN/Inf
// scan switch: an MTP head (loaded from the target's file into a store of its own) and a
// draft model (-md) with a NaN weight are refused at load by default, naming the tensor,
// and load with --no-check-weights, as the target does.
// To add a drafter: poison one of its tensors with copy_gguf_with_edit and run both ways.
#include "cli_run.h"

#include <gtest/gtest.h>

#include "support/fixtures.h"
#include "support/gguf_edit.h"

namespace tdm {
namespace {

const std::string& dir_drafter_weight_check() {
    static const std::string d = test::make_temp_dir("drafter-weights");
    return d;
}

// `tandem synth` of `arch` with `tensor`'s element 2 set to NaN.
std::string synth_with_nan(const std::string& arch, const std::string& tensor) {
    const std::string clean = dir_drafter_weight_check() + "/" + arch + ".gguf", bad = dir_drafter_weight_check() + "/" + arch + "-" + tensor + ".gguf";
    CliRun r = tandem({"synth", "--arch", arch, "--type", "f16", "-o", clean});
    EXPECT_EQ(r.status, 0) << r.err;
    test::GgufEdit e;
    e.nan_tensor = tensor;
    e.nan_element = 2;
    const Status st = test::copy_gguf_with_edit(clean, bad, e);
    EXPECT_TRUE(st.ok()) << st.error().message();
    return bad;
}

TEST(DrafterWeightCheck, an_mtp_head_with_a_nan_weight_is_refused_unless_the_check_is_off) {
    // blk.4 is the MTP layer of the tiny qwen35 (trunk: blk.0..3); the target never loads it
    const std::string p = synth_with_nan("qwen35", "blk.4.nextn.enorm.weight");
    const std::vector<std::string> run = {"run", "-m", p, "-p", "Hi", "-n", "4", "--temp", "0"};
    CliRun plain = tandem(run);
    ASSERT_EQ(plain.status, 0) << plain.err;

    std::vector<std::string> mtp = run;
    mtp.insert(mtp.end(), {"--spec-type", "mtp"});
    CliRun r = tandem(mtp);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("loading draft head qwen35-mtp")) << r.err;
    EXPECT_TRUE(r.has("tensor 'blk.4.nextn.enorm.weight' (f32): element 2")) << r.err;

    mtp.push_back("--no-check-weights");
    r = tandem(mtp);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(r.has("nextn.enorm")) << r.err;
    EXPECT_EQ(r.out, plain.out);  // the head's drafts are rejected; the target decides
}

TEST(DrafterWeightCheck, a_draft_model_with_a_nan_weight_follows_the_same_switch) {
    const std::string target = dir_drafter_weight_check() + "/target.gguf";
    ASSERT_EQ(tandem({"synth", "--arch", "qwen3", "--type", "f16", "-o", target}).status, 0);
    const std::string draft = synth_with_nan("qwen3", "blk.0.attn_norm.weight");
    CliRun plain = tandem({"run", "-m", target, "-p", "Hi", "-n", "4", "--temp", "0"});
    ASSERT_EQ(plain.status, 0) << plain.err;
    const std::vector<std::string> run = {"run", "-m", target, "-md", draft, "-p", "Hi", "-n", "4", "--temp", "0"};
    CliRun r = tandem(run);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("loading the draft model")) << r.err;
    EXPECT_TRUE(r.has("tensor 'blk.0.attn_norm.weight'")) << r.err;

    std::vector<std::string> unchecked = run;
    unchecked.push_back("--no-check-weights");
    r = tandem(unchecked);
    EXPECT_FALSE(r.has("tensor 'blk.0.attn_norm.weight'")) << "scanned despite --no-check-weights: " << r.err;
    // loaded, its NaN logits are caught at run time instead: the drafter is turned off
    // and the target alone decides
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("drafter draft failed and is off")) << r.err;
    EXPECT_TRUE(r.has("the model produced NaN logits")) << r.err;
    EXPECT_EQ(r.out, plain.out);
}

}  // namespace
}  // namespace tdm
