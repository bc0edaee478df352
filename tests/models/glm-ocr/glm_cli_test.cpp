// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_cli_test.cpp: GLM-OCR through the built `tandem`: synth in both layouts, info
// (which RoPE pairing the file gets), run with and without the MTP head (same tokens; every
// draft accepted on the repeating model), a GLM-4 file with q/k/v biases, and the errors a user
// meets: a synth option the synthesizer does not take, a GLM-4 file with an output-projection
// bias, --spec-type mtp on a file without the MTP layer.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_run.h"
#include "formats/gguf.h"
#include "support/fixtures.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

const std::string kEnv = "TANDEM_LOG=off";

std::string synth_cli(const std::vector<std::string>& extra, const std::string& name) {
    const std::string path = test::make_temp_dir("glmcli") + "/" + name;
    std::vector<std::string> args = {"synth", "--arch", "glm4", "-o", path};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, kEnv);
    EXPECT_EQ(r.status, 0) << r.err;
    return path;
}

nlohmann::json run_json(const std::string& model, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"run", "-m", model, "-p", "Hello there", "-n", "20", "--temp", "0",
                                     "--ignore-eos", "--output-format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, kEnv);
    EXPECT_EQ(r.status, 0) << r.err;
    return nlohmann::json::parse(r.out, nullptr, false);
}

TEST(GlmCli, info_names_the_rope_pairing_each_layout_gets) {
    const std::string gguf = synth_cli({}, "m.gguf");
    const std::string hf = synth_cli({"--format", "hf"}, "hf");
    const CliRun a = tandem({"info", gguf}, kEnv);
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_TRUE(a.has("rope = neox, sections [4, 6, 6]")) << a.out;
    EXPECT_TRUE(a.has("n_nextn = 1")) << a.out;
    const CliRun b = tandem({"info", hf}, kEnv);
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_TRUE(b.has("rope = adjacent, sections [4, 6, 6]")) << b.out;
}

TEST(GlmCli, run_with_the_mtp_head_prints_plain_decodings_tokens) {
    for (const std::vector<std::string>& extra : {std::vector<std::string>{}, {"--repeating"}, {"--format", "hf"}}) {
        const std::string model = synth_cli(extra, extra.size() == 2 ? "hf" : "m.gguf");
        const nlohmann::json plain = run_json(model, {});
        const nlohmann::json spec = run_json(model, {"--spec-type", "mtp"});
        ASSERT_TRUE(plain.is_object() && spec.is_object());
        EXPECT_EQ(plain["tokens"], spec["tokens"]);
        ASSERT_TRUE(spec.contains("speculative"));
        EXPECT_GT(spec["speculative"]["drafted_tokens"].get<int>(), 0);
        if (extra.size() == 1) {
            EXPECT_EQ(spec["speculative"]["acceptance_rate"].get<double>(), 1.0);
        }
    }
}

TEST(GlmCli, synth_refuses_options_it_does_not_take) {
    const CliRun r = tandem({"synth", "--arch", "glm4", "--tied", "true", "-o", test::make_temp_dir("glmcli") + "/x.gguf"}, kEnv);
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("no option --tied")) << r.err;
}

TEST(GlmCli, mtp_on_a_file_without_the_layer_says_how_to_get_one) {
    const std::string model = synth_cli({"--mtp", "false"}, "m.gguf");
    const CliRun r = tandem({"run", "-m", model, "-p", "Hi", "-n", "4", "--spec-type", "mtp"}, kEnv);
    EXPECT_NE(r.status, 0);
    EXPECT_TRUE(r.has("no NextN/MTP layer")) << r.err;
}

// A copy of `model` with a constant bias `name` of as many rows as the weight `rows_of` has.
std::string with_bias(const std::string& model, const std::string& name, const std::string& rows_of) {
    const std::string out = test::make_temp_dir("glmcli") + "/biased.gguf";
    auto f = GgufFile::open(model);
    EXPECT_TRUE(f.ok());
    if (!f.ok()) return out;
    GgufWriter w;
    for (const GgufKV& kv : (*f)->kvs()) w.add_value(kv.key, kv.value);
    int64_t rows = 0;
    for (const GgufTensorInfo& ti : (*f)->tensors()) {
        EXPECT_TRUE(
            w.add_tensor(ti.name, ti.type, std::vector<int64_t>(ti.ne, ti.ne + ti.n_dims), (*f)->tensor_data(ti), ti.nbytes)
                .ok());
        if (ti.name == rows_of) rows = ti.ne[1];
    }
    EXPECT_GT(rows, 0);
    std::vector<float> bias(size_t(rows), 0.5f);
    EXPECT_TRUE(w.add_tensor(name, 0, {rows}, bias.data(), bias.size() * 4).ok());
    EXPECT_TRUE(w.write_file(out).ok());
    return out;
}

// GLM-4-0414 files carry q/k/v biases, which the decoder adds: such a file runs. No GLM-4 has
// an output-projection bias, which the decoder does not add: refused by name instead of
// producing wrong text.
TEST(GlmCli, a_glm4_file_with_qkv_biases_runs_and_one_with_an_output_bias_is_refused) {
    const std::string model = synth_cli({"--type", "f32"}, "m.gguf");
    const CliRun q = tandem({"run", "-m", with_bias(model, "blk.0.attn_q.bias", "blk.0.attn_q.weight"), "-p", "Hi", "-n",
                             "4"},
                            kEnv);
    EXPECT_EQ(q.status, 0) << q.err;
    const CliRun o = tandem(
        {"run", "-m", with_bias(model, "blk.0.attn_output.bias", "blk.0.attn_output.weight"), "-p", "Hi", "-n", "4"}, kEnv);
    EXPECT_NE(o.status, 0);
    EXPECT_TRUE(o.has("attention output bias")) << o.err;
}

}  // namespace
}  // namespace tdm
