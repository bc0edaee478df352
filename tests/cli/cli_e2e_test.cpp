// SPDX-License-Identifier: Apache-2.0
// tests/cli/cli_e2e_test.cpp: the `tandem` executable end to end: commands,
// output formats, and every bad input of the runtime issues giving a clear
// error and a non-zero exit instead of a crash.
//
// To add a case: call tandem({...}) and check the exit status and a substring
// of stdout/stderr. A crash shows up as an exit status >= 128 (signal).
#include "cli/cli_models.h"
#include "cli_run.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"
#include "support/gguf_edit.h"
#include "tokenizer/vocab_gguf.h"

namespace tdm {
namespace {

std::string write_text(const std::string& name, const std::string& text) {
    static const std::string dir = test::make_temp_dir("cli-files");
    const std::string p = dir + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    return p;
}

// ------------------------------------------------------------------ commands

TEST(Cli, help_lists_every_command_and_run_help_teaches_the_speculative_options) {
    CliRun r = tandem({"--help"});
    EXPECT_EQ(r.status, 0);
    for (const char* c : {"run", "info", "tokenize", "plugins", "devices", "synth", "demo", "bench"}) EXPECT_TRUE(r.has(c)) << c;
    r = tandem({"run", "--help"});
    EXPECT_EQ(r.status, 0);
    EXPECT_TRUE(r.has("-md, --model-draft"));
    EXPECT_TRUE(r.has("--spec-type"));
    EXPECT_TRUE(r.has("--dump-logits"));
}

TEST(Cli, unknown_option_is_a_usage_error_with_a_suggestion) {
    CliRun r = tandem({"run", "--temperature", "0"});
    EXPECT_EQ(r.status, 2);
    EXPECT_TRUE(r.has("--temp")) << r.err;
}

TEST(Cli, devices_lists_the_vulkan_device) {
    CliRun r = tandem({"devices"});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("* [0]")) << r.out;
}

TEST(Cli, no_vulkan_device_is_a_clear_error_that_says_how_to_install_one) {
    CliRun r = tandem({"devices"}, "VK_ICD_FILENAMES=/nonexistent/icd.json VK_DRIVER_FILES=/nonexistent/icd.json");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_TRUE(r.has("no Vulkan device found")) << r.err;
    EXPECT_TRUE(r.has("mesa-vulkan-drivers")) << r.err;
}

TEST(Cli, plugins_lists_qwen_and_reports_broken_plugins_with_reasons) {
    CliRun r = tandem({"plugins"}, std::string("TANDEM_PLUGIN_PATH=") + TANDEM_TEST_PLUGIN_DIR);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("qwen-nextn")) << r.out;
    EXPECT_TRUE(r.has("architecture qwen3")) << r.out;
    EXPECT_TRUE(r.has("speaks ABI 7..9, this host offers ABI 1..3")) << r.out;
    EXPECT_TRUE(r.has("does not export tdm_plugin_negotiate")) << r.out;
    EXPECT_TRUE(r.has("init failed: the answer is not 42 today")) << r.out;
    EXPECT_TRUE(r.has("drafter echo")) << r.out;
}

TEST(Cli, info_describes_architecture_plugin_hparams_tensors_and_tokenizer) {
    CliRun r = tandem({"info", tiny_qwen3_model()});
    EXPECT_EQ(r.status, 0) << r.err;
    for (const char* s : {"architecture:  qwen3", "plugin:        qwen-nextn", "n_layer = 2", "blk.0.attn_q.weight",
                          "byte-level BPE"})
        EXPECT_TRUE(r.has(s)) << s << "\n" << r.out;
    r = tandem({"info", "--output-format", "json", tiny_qwen3_model()});
    ASSERT_EQ(r.status, 0);
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["architecture"], "qwen3");
    EXPECT_EQ(j["plugin"], "qwen-nextn");
    EXPECT_GT(j["tensors"].size(), 10u);
}

TEST(Cli, tokenize_prints_ids_and_matches_special_tokens) {
    CliRun r = tandem({"tokenize", "-m", tiny_qwen3_model(), "--ids", "<|im_start|>user"});
    EXPECT_EQ(r.status, 0) << r.err;
    auto f = GgufFile::open(tiny_qwen3_model());
    ASSERT_TRUE(f.ok());
    auto tok = load_tokenizer_gguf(**f);
    ASSERT_TRUE(tok.ok());
    const std::string want = std::to_string(tok->token_id("<|im_start|>")) + ",";
    EXPECT_EQ(r.out.rfind(want, 0), 0u) << r.out;  // one token for the special text, then "user"
}

TEST(Cli, run_greedy_is_deterministic_and_json_reports_tokens_text_and_timings) {
    const std::vector<std::string> args = {"run", "-m", tiny_qwen3_model(), "-p", "Hello", "-n", "12", "--temp", "0",
                                           "--ignore-eos", "--output-format", "json"};
    CliRun a = tandem(args), b = tandem(args);
    ASSERT_EQ(a.status, 0) << a.err;
    auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
    EXPECT_EQ(ja["tokens"].size(), 12u);
    EXPECT_EQ(ja["tokens"], jb["tokens"]);
    EXPECT_TRUE(ja.contains("text"));
    EXPECT_GT(ja["timings"]["decode_tokens_per_s"].get<double>(), 0.0);
    EXPECT_EQ(ja["stop_reason"], "length");
}

TEST(Cli, prompt_tokens_and_dump_logits_write_one_row_per_generated_token) {
    const std::string dump = write_text("logits.bin", "");
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2,3,4", "-n", "5", "--temp", "0", "--ignore-eos",
                    "--dump-logits", dump});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(std::filesystem::file_size(dump), 5u * 512u * 4u);
    r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,2,3,4", "-n", "5", "--temp", "0", "--ignore-eos",
                "--dump-logits", dump, "--logits-all"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(std::filesystem::file_size(dump), (4u + 4u) * 512u * 4u);  // 4 prompt rows + 4 decode rows
}

TEST(Cli, sampling_with_a_seed_is_reproducible) {
    const std::vector<std::string> args = {"run", "-m", tiny_qwen3_model(), "-p", "Once", "-n", "10", "--temp", "1.0",
                                           "--seed", "42", "--ignore-eos", "--output-format", "json"};
    CliRun a = tandem(args), b = tandem(args);
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(nlohmann::json::parse(a.out)["tokens"], nlohmann::json::parse(b.out)["tokens"]);
}

// ------------------------------------------------------------------ bad input

TEST(CliBadInput, a_file_that_is_not_a_model_is_refused) {
    CliRun r = tandem({"run", "-m", write_text("notes.txt", "just some text\n"), "-p", "x"});
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(r.has("GGUF")) << r.err;
}

TEST(CliBadInput, bad_magic_and_unsupported_version_are_refused) {
    std::string v4 = "GGUF";
    v4 += std::string("\x04\0\0\0", 4) + std::string(16, '\0');
    CliRun r = tandem({"run", "-m", write_text("v4.gguf", v4), "-p", "x"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("version 4")) << r.err;
    std::string bad = "GGUX" + std::string(20, '\0');
    r = tandem({"info", write_text("bad.gguf", bad)});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("GGUF")) << r.err;
}

TEST(CliBadInput, truncated_file_and_tensor_data_beyond_the_end_are_refused) {
    const std::string full = test::read_file(tiny_qwen3_model());
    CliRun r = tandem({"info", write_text("cut_head.gguf", full.substr(0, 300))});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("truncated")) << r.err;
    r = tandem({"run", "-m", write_text("cut_data.gguf", full.substr(0, full.size() - 1000)), "-p", "x"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("beyond the end") || r.has("past the end") || r.has("end of the file")) << r.err;
}

TEST(CliBadInput, metadata_array_with_an_absurd_length_is_refused_without_allocating) {
    std::string f = "GGUF";
    auto u32 = [&](uint32_t v) { f.append(reinterpret_cast<const char*>(&v), 4); };
    auto u64 = [&](uint64_t v) { f.append(reinterpret_cast<const char*>(&v), 8); };
    u32(3);
    u64(0);
    u64(1);
    u64(5);
    f += "a.arr";
    u32(9);  // ARRAY
    u32(4);  // of UINT32
    u64(uint64_t(1) << 60);
    CliRun r = tandem({"info", write_text("huge_array.gguf", f)});
    EXPECT_EQ(r.status, 1);
    EXPECT_LT(r.status, 128);
    EXPECT_TRUE(r.has("a.arr")) << r.err;
}

TEST(CliBadInput, unknown_architecture_lists_the_loaded_plugins) {
    const std::string p = write_text("llama.gguf", "");
    ASSERT_TRUE(test::copy_gguf_with_edit(tiny_qwen3_model(), p, {"", "", "", 16, "general.architecture", "frobnicator"}).ok());
    CliRun r = tandem({"run", "-m", p, "-p", "x"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("unknown architecture 'frobnicator'")) << r.err;
    EXPECT_TRUE(r.has("qwen-nextn (GGUF: qwen3")) << r.err;
}

TEST(CliBadInput, missing_tensor_is_named) {
    const std::string p = write_text("missing.gguf", "");
    ASSERT_TRUE(test::copy_gguf_with_edit(tiny_qwen3_model(), p, {"blk.1.ffn_up.weight"}).ok());
    CliRun r = tandem({"run", "-m", p, "-p", "x"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("missing tensor 'blk.1.ffn_up.weight'")) << r.err;
}

TEST(CliBadInput, wrong_tensor_shape_names_expected_and_found) {
    const std::string p = write_text("shape.gguf", "");
    ASSERT_TRUE(test::copy_gguf_with_edit(tiny_qwen3_model(), p, {"", "blk.0.attn_k.weight"}).ok());
    CliRun r = tandem({"run", "-m", p, "-p", "x"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("tensor 'blk.0.attn_k.weight' has shape [64, 16], expected [64, 32]")) << r.err;
}

TEST(CliBadInput, unsupported_quant_type_is_named) {
    const std::string p = write_text("iq2.gguf", "");
    test::GgufEdit e;
    e.retype_tensor = "blk.0.ffn_gate.weight";
    e.retype_to = 3;  // Q4_1: a valid GGUF type (32-element blocks) that tandem does not compute with
    ASSERT_TRUE(test::copy_gguf_with_edit(tiny_qwen3_model(), p, e).ok());
    CliRun r = tandem({"run", "-m", p, "-p", "x"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("has type q4_1, which tandem does not support")) << r.err;
}

TEST(CliBadInput, bad_toml_reports_line_and_column_and_unknown_keys_are_reported) {
    CliRun r = tandem({"--config", write_text("bad.toml", "[sampling]\ntemperature = 0.5\ntop_k = = 3\n"), "devices"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("line 3")) << r.err;
    r = tandem({"--config", write_text("unknown.toml", "[speculative]\ndrft_max = 4\n"), "devices"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("drft_max")) << r.err;
    EXPECT_TRUE(r.has("draft_max")) << r.err;
}

TEST(CliBadInput, prompt_longer_than_the_context_is_refused) {
    std::string ids;
    for (int i = 0; i < 40; ++i) ids += (i ? "," : "") + std::to_string(i + 1);
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "-c", "32", "--prompt-tokens", ids, "-n", "4"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("the prompt has 40 tokens but the context holds 32")) << r.err;
}

TEST(CliBadInput, out_of_device_memory_names_what_does_not_fit_and_its_size) {
    // refused by the memory plan before loading (tests/cli/memory_plan_test.cpp)
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "-p", "x", "--memory-limit", "64KiB"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("not enough device memory")) << r.err;
    EXPECT_TRUE(r.has("weights of tiny.gguf")) << r.err;
    EXPECT_TRUE(r.has("memory limit of 64.00 KiB")) << r.err;
}

TEST(CliBadInput, token_ids_outside_the_vocabulary_are_refused) {
    CliRun r = tandem({"run", "-m", tiny_qwen3_model(), "--prompt-tokens", "1,999999", "-n", "2"});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("outside the vocabulary")) << r.err;
}

// The demo's own cache directory, so the tests write (and reuse) their own model.
const std::string& demo_cache() {
    static const std::string d = test::make_temp_dir("cli-demo-cache");
    return d;
}

TEST(Cli, demo_times_plain_and_speculative_decoding_and_says_they_give_the_same_tokens) {
    CliRun r = tandem({"demo", "-n", "24"}, "XDG_CACHE_HOME=" + quote(demo_cache()));
    EXPECT_EQ(r.status, 0) << r.err;
    for (const char* s : {"the first run compiles shaders", "weights are random", "plain decoding:",
                          "speculative decoding:", "speedup:", "acceptance:", "tokens per target pass:",
                          "same tokens as plain decoding: yes"})
        EXPECT_TRUE(r.has(s)) << s << "\n" << r.out;
}

TEST(Cli, demo_json_reports_positive_figures_and_exactness) {
    CliRun r = tandem({"demo", "--json"}, "XDG_CACHE_HOME=" + quote(demo_cache()));
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    ASSERT_TRUE(j.contains("same_tokens")) << r.out;
    EXPECT_EQ(j["same_tokens"], true) << r.out;
    EXPECT_EQ(j["random_weights"], true) << r.out;
    // present and positive; never a speed threshold (timings depend on the machine and its load)
    for (const char* k : {"plain_tokens_per_s", "spec_tokens_per_s", "speedup", "acceptance_rate",
                          "tokens_per_target_pass", "generated_tokens"}) {
        ASSERT_TRUE(j.contains(k) && j[k].is_number()) << k << "\n" << r.out;
        EXPECT_GT(j[k].get<double>(), 0.0) << k << "\n" << r.out;
    }
    EXPECT_TRUE(tandem({"demo", "--help"}).has("--json"));
}

// ------------------------------------------------------------------ qwen35 + MTP

namespace q35 {

const std::string& dir() {
    static const std::string d = test::make_temp_dir("cli-qwen35");
    return d;
}

}  // namespace q35

class CliQwen35 : public ::testing::TestWithParam<std::string> {};

TEST_P(CliQwen35, synth_run_from_gguf_and_hf_and_mtp_speculation_gives_the_plain_tokens) {
    const std::string arch = GetParam();
    const std::string gguf = q35::dir() + "/" + arch + ".gguf", hf = q35::dir() + "/" + arch + "-hf";
    ASSERT_EQ(tandem({"synth", "--arch", arch, "--type", "f32", "-o", gguf}).status, 0);
    ASSERT_EQ(tandem({"synth", "--arch", arch, "--type", "f32", "--format", "hf", "-o", hf}).status, 0);
    CliRun info = tandem({"info", gguf});
    EXPECT_EQ(info.status, 0) << info.err;
    for (const std::string& s : std::vector<std::string>{"architecture:  " + arch, "gated deltanet", "recurrent states",
                                                         "checkpoints", "draft head:    qwen35-mtp"})
        EXPECT_TRUE(info.has(s)) << s << "\n" << info.out;
    std::vector<nlohmann::json> runs;
    for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
             {"-m", gguf}, {"-m", hf}, {"-m", gguf, "--spec-type", "mtp", "--draft-max", "3"},
             {"-m", hf, "--spec-type", "nextn"}}) {
        std::vector<std::string> args = {"run", "-p", "Hello there", "-n", "16", "--temp", "0", "--ignore-eos",
                                         "--output-format", "json"};
        args.insert(args.end(), extra.begin(), extra.end());
        CliRun r = tandem(args);
        ASSERT_EQ(r.status, 0) << r.err;
        runs.push_back(nlohmann::json::parse(r.out));
    }
    for (size_t i = 1; i < runs.size(); ++i) EXPECT_EQ(runs[i]["tokens"], runs[0]["tokens"]) << "run " << i;
    EXPECT_TRUE(runs[2].contains("speculative"));
}

// What the user meets by default: the goodput controller chose the draft lengths, and run
// says what it chose (text, JSON, trace); --spec-fixed drafts --draft-max every round.
TEST(CliController, run_reports_what_the_goodput_controller_chose_and_spec_fixed_turns_it_off) {
    const std::string gguf = q35::dir() + "/controller.gguf", trace = q35::dir() + "/controller-trace.ndjson";
    ASSERT_EQ(tandem({"synth", "--arch", "qwen35", "--type", "f32", "-o", gguf}).status, 0);
    const std::vector<std::string> base = {"run", "-m", gguf, "-p", "Hello there", "-n", "16", "--temp", "0",
                                           "--ignore-eos", "--spec-type", "mtp"};
    std::vector<std::string> args = base;
    args.insert(args.end(), {"--output-format", "json", "--spec-trace", trace});
    CliRun r = tandem(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const nlohmann::json& c = j["speculative"]["controller"];
    EXPECT_TRUE(c["on"].get<bool>()) << j["speculative"].dump();
    EXPECT_GE(c["rounds"].get<uint64_t>(), 1u) << "a draft head's first round";
    EXPECT_GE(c["off_steps"].get<uint64_t>(), 1u) << "plain steps measure the baseline";
    for (const char* k : {"probes", "mean_k", "estimated_speedup", "measured_speedup"}) EXPECT_TRUE(c.contains(k)) << k;
    std::ifstream lines(trace);
    std::string first;
    ASSERT_TRUE(std::getline(lines, first));
    EXPECT_TRUE(nlohmann::json::parse(first).contains("controller")) << first;

    r = tandem(base);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("controller: ")) << r.err;
    args = base;
    args.insert(args.end(), {"--output-format", "json", "--spec-fixed", "--draft-max", "3"});
    r = tandem(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const nlohmann::json fixed = nlohmann::json::parse(r.out);
    EXPECT_FALSE(fixed["speculative"]["controller"]["on"].get<bool>());
    EXPECT_GT(fixed["speculative"]["drafted_tokens"].get<uint64_t>(), 0u);
    EXPECT_EQ(fixed["tokens"], j["tokens"]);
}

INSTANTIATE_TEST_SUITE_P(DenseAndMoe, CliQwen35, ::testing::Values("qwen35", "qwen35moe"));

TEST(CliBadInput, mtp_on_a_file_without_the_head_says_how_to_get_one) {
    const std::string path = q35::dir() + "/no-mtp.gguf";
    ASSERT_EQ(tandem({"synth", "--arch", "qwen35", "--mtp", "false", "-o", path}).status, 0);
    CliRun r = tandem({"run", "-m", path, "-p", "Hi", "-n", "4", "--spec-type", "mtp"});
    EXPECT_NE(r.status, 0);
    EXPECT_LT(r.status, 128) << "crashed";
    EXPECT_TRUE(r.has("no NextN/MTP layers")) << r.err;
    EXPECT_TRUE(r.has("--mtp-head")) << r.err;
    CliRun info = tandem({"info", path});
    EXPECT_EQ(info.status, 0);
    EXPECT_TRUE(info.has("draft head:    none")) << info.out;
    // an MTP head for a model of another architecture
    r = tandem({"run", "-m", tiny_qwen3_model(), "-p", "Hi", "-n", "4", "--spec-type", "mtp"});
    EXPECT_NE(r.status, 0);
    EXPECT_LT(r.status, 128);
    EXPECT_TRUE(r.has("drafts for qwen35, qwen35moe models; this model is qwen3")) << r.err;
}

}  // namespace
}  // namespace tdm
