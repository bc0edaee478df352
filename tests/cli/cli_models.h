/* SPDX-License-Identifier: Apache-2.0 */
// tests/cli/cli_models.h: the tiny models the CLI tests write once with `tandem synth` into
// their directory: any name is a Qwen3 (seed 1, f16), except "draft" (a draft model of it),
// "other" (the same Qwen3 in f32: another tensor table) and "qwen35" (Qwen3.5 with its MTP
// head, f32). And the tiny Qwen3 (f16) written once through the synthesizer library, for
// the tests that need a model but do not test `tandem synth`.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/cli_run.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"

namespace tdm {

inline const std::string& cli_test_model(const std::string& dir, const std::string& name) {
    static std::map<std::string, std::string> made;
    const std::string path = dir + "/" + name + ".gguf";
    if (auto it = made.find(path); it != made.end()) return it->second;
    std::vector<std::string> args = {"synth", "-o", path, "--type", "f16"};
    if (name == "draft") args.insert(args.end(), {"--draft-of-seed", "1"});
    if (name == "other") args = {"synth", "-o", path, "--type", "f32"};
    if (name == "qwen35") args = {"synth", "--arch", "qwen35", "--type", "f32", "-o", path};
    CliRun r = tandem(args);
    EXPECT_EQ(r.status, 0) << r.err;
    return made[path] = path;
}

inline const std::string& tiny_qwen3_model() {
    static const std::string path = [] {
        const std::string p = test::make_temp_dir("cli-tiny-qwen3") + "/tiny.gguf";
        auto shape = synth::qwen3_preset("tiny");
        synth::Qwen3SynthOptions o;
        o.weight_type = DType::F16;
        EXPECT_TRUE(shape.ok() && synth::synth_qwen3_gguf(p, *shape, o).ok());
        return p;
    }();
    return path;
}

}  // namespace tdm
