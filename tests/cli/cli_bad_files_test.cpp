// SPDX-License-Identifier: Apache-2.0
// tests/cli/cli_bad_files_test.cpp: `tandem run` on files that are not what they claim:
// a FIFO as the model or the prompt file (refused at once, never waited on), a directory
// as the prompt file, and a model whose weights hold NaN (refused at load, naming the
// tensor; with --no-check-weights it loads, and the NaN logits it then produces are an
// error naming the position instead of a printed token 0; with TANDEM_CHECK_NAN=1 it also
// names the first layer whose output became non-finite).
// To add a case: make the bad file under files_dir() and run tandem on it.
#include "cli/cli_models.h"
#include "cli_run.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "formats/gguf.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

const std::string& files_dir() {
    static const std::string dir = test::make_temp_dir("cli-bad-files");
    return dir;
}

// A copy of the tiny model with element `index` of `tensor` set to NaN.
std::string model_with_nan(const std::string& name, const std::string& tensor, uint64_t index) {
    const std::string p = files_dir() + "/" + name;
    std::string bytes = test::read_file(tiny_qwen3_model());
    auto f = GgufFile::open(tiny_qwen3_model());
    EXPECT_TRUE(f.ok());
    if (!f.ok()) return p;
    const GgufTensorInfo* t = (*f)->find_tensor(tensor);
    EXPECT_NE(t, nullptr) << tensor;
    if (!t) return p;
    if (t->type == 0) {  // f32
        const uint32_t nan = 0x7fc00000u;
        bytes.replace(t->file_offset + 4 * index, 4, reinterpret_cast<const char*>(&nan), 4);
    } else {  // f16
        const uint16_t nan = 0x7e00u;
        bytes.replace(t->file_offset + 2 * index, 2, reinterpret_cast<const char*>(&nan), 2);
    }
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
}

TEST(CliBadFiles, a_fifo_as_the_model_is_refused_at_once) {
    const std::string fifo = files_dir() + "/fifo.gguf";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    CliRun r = tandem({"run", "-m", fifo, "-p", "x"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("model file " + fifo + " is a FIFO, not a regular file")) << r.err;
}

TEST(CliBadFiles, a_directory_or_a_fifo_as_the_prompt_file_is_named_as_such) {
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "-f", files_dir(), "-n", "2"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("prompt file " + files_dir() + " is a directory, not a regular file")) << r.err;
    EXPECT_FALSE(r.has("empty")) << r.err;
    const std::string fifo = files_dir() + "/prompt.fifo";
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    r = tandem({"run", "-m", tiny_qwen3_model(), "-f", fifo, "-n", "2"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("prompt file " + fifo + " is a FIFO, not a regular file")) << r.err;
}

TEST(CliBadFiles, nan_weights_are_refused_naming_the_tensor_unless_the_check_is_off) {
    const std::string p = model_with_nan("nan.gguf", "blk.0.attn_norm.weight", 5);
    CliRun r = tandem({"run", "-m", p, "-p", "hello", "-n", "2"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("tensor 'blk.0.attn_norm.weight'")) << r.err;
    EXPECT_TRUE(r.has("element 5 (row 0, column 5) is NaN")) << r.err;

    // Loaded anyway, the NaN spreads to every logit: an error, not token 0 and exit 0.
    r = tandem({"run", "-m", p, "-p", "hello", "-n", "2", "--no-check-weights"});
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_FALSE(r.has("element 5")) << r.err;
    EXPECT_TRUE(r.has("the model produced NaN logits at position")) << r.err;

    // The config key does the same as the flag.
    const std::string conf = files_dir() + "/nocheck.toml";
    std::ofstream(conf) << "[model]\ncheck_weights = false\n";
    r = tandem({"--config", conf, "run", "-m", p, "-p", "hello", "-n", "2"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("the model produced NaN logits at position")) << r.err;
}

TEST(CliBadFiles, with_tandem_check_nan_the_nan_logits_error_names_the_first_bad_layer) {
    const std::string p = model_with_nan("nan-blk1.gguf", "blk.1.ffn_norm.weight", 3);
    CliRun r = tandem({"run", "-m", p, "-p", "hello", "-n", "2", "--no-check-weights"}, "TANDEM_CHECK_NAN=1");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_TRUE(r.has("the model produced NaN logits at position")) << r.err;
    EXPECT_TRUE(r.has("first non-finite value in blk.1 ffn_norm (op rms_norm")) << r.err;
    EXPECT_TRUE(r.has("reads blk.1.ffn_norm.weight")) << r.err;

    // the switch off: the generic error, which points at the switch
    r = tandem({"run", "-m", p, "-p", "hello", "-n", "2", "--no-check-weights"}, "TANDEM_CHECK_NAN=0");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_TRUE(r.has("TANDEM_CHECK_NAN=1 names the first layer")) << r.err;
    EXPECT_FALSE(r.has("first non-finite value")) << r.err;
}

TEST(CliBadFiles, a_clean_model_still_runs_with_the_checks_on) {
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "-p", "hello", "-n", "3", "--temp", "0"});
    EXPECT_EQ(r.status, 0) << r.err;
    // greedy, so the two runs must agree
    CliRun debug = tandem({"run", "-m", tiny_qwen3_model(), "-p", "hello", "-n", "3", "--temp", "0"}, "TANDEM_CHECK_NAN=1");
    EXPECT_EQ(debug.status, 0) << debug.err;
    EXPECT_EQ(debug.out, r.out);  // the probes change nothing on a clean model
}

}  // namespace
}  // namespace tdm
