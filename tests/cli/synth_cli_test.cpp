// SPDX-License-Identifier: Apache-2.0
// tests/cli/synth_cli_test.cpp: `tandem synth` through the plugins' synthesizers
// (sdk/include/tandem/synth.h): the qwen-nextn companion writes the same bytes as the synth code
// the tests link; the CLI finds a synthesizer through the plugin registry (by model architecture
// or by a draft head's file architecture), passes the options exactly, and names the plugin and
// the file when a synthesizer is missing or broken; `tandem plugins` shows it.
//
// Broken set-ups are built in a temporary plugin directory: a copy of the qwen-nextn plugin
// (found first with --plugin-path, so it shadows the build tree's) and, under synth/, whatever
// file the case needs as its synthesizer.
#include "cli_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/synthesizers.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

namespace fs = std::filesystem;

// A plugin directory holding a copy of the qwen-nextn plugin and, if `synth` is not empty, that
// file as its synthesizer.
std::string plugin_dir(const std::string& tag, const std::string& synth = "") {
    const std::string dir = test::make_temp_dir("synth-cli-" + tag);
    fs::copy_file(TANDEM_QWEN_PLUGIN, dir + "/tandem-qwen-nextn.so", fs::copy_options::overwrite_existing);
    if (!synth.empty()) {
        fs::create_directories(dir + "/synth");
        fs::copy_file(synth, dir + "/synth/tandem-qwen-nextn-synth.so", fs::copy_options::overwrite_existing);
    }
    return dir;
}

std::string temp_file(const std::string& name) {
    static const std::string dir = test::make_temp_dir("synth-cli-out");
    return dir + "/" + name;
}

TEST(SynthCli, every_arch_is_written_by_the_plugin_synthesizer_byte_for_byte_as_the_linked_synth_code) {
    const std::string dir = test::make_temp_dir("synth-cli-bytes");
    // qwen3 through the CLI and directly
    CliRun r = tandem({"synth", "--type", "f16", "--layers", "1", "-o", dir + "/cli-qwen3.gguf"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("wrote " + dir + "/cli-qwen3.gguf: qwen3 tiny, 1 layers, n_embd 64, vocab 512, f16")) << r.err;
    synth::Qwen3Shape s3 = *synth::qwen3_preset("tiny");
    s3.n_layer = 1;
    synth::Qwen3SynthOptions o3;
    o3.weight_type = DType::F16;
    ASSERT_TRUE(synth::synth_qwen3_gguf(dir + "/lib-qwen3.gguf", s3, o3).ok());
    EXPECT_EQ(test::read_file(dir + "/cli-qwen3.gguf"), test::read_file(dir + "/lib-qwen3.gguf"));
    // qwen35 and qwen35moe, one as GGUF and one as HF
    r = tandem({"synth", "--arch", "qwen35", "--type", "q8_0", "--mtp", "false", "-o", dir + "/cli-qwen35.gguf"});
    ASSERT_EQ(r.status, 0) << r.err;
    synth::Qwen35SynthOptions o35;
    o35.weight_type = DType::Q8_0;
    o35.mtp = false;
    ASSERT_TRUE(synth::synth_qwen35_gguf(dir + "/lib-qwen35.gguf", *synth::qwen35_preset("tiny"), o35).ok());
    EXPECT_EQ(test::read_file(dir + "/cli-qwen35.gguf"), test::read_file(dir + "/lib-qwen35.gguf"));
    r = tandem({"synth", "--arch", "qwen35moe", "--type", "bf16", "--format", "hf", "-o", dir + "/cli-moe"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has(": qwen35moe tiny-moe, 4 layers")) << r.err;
    synth::Qwen35SynthOptions om;
    om.weight_type = DType::BF16;
    ASSERT_TRUE(synth::synth_qwen35_hf(dir + "/lib-moe", *synth::qwen35_preset("tiny-moe"), om).ok());
    for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
        EXPECT_EQ(test::read_file(dir + "/cli-moe/" + f), test::read_file(dir + "/lib-moe/" + f)) << f;
}

TEST(SynthCli, unknown_architecture_lists_what_the_loaded_synthesizers_write) {
    CliRun r = tandem({"synth", "--arch", "mistral", "-o", temp_file("mistral.gguf")});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("synth: unknown architecture 'mistral' (available: dflash, eagle3, gemma4, gemma4-assistant, glm4, "
                      "llama, qwen3, qwen35, qwen35moe)"))
        << r.err;
}

TEST(SynthCli, a_draft_heads_file_architecture_is_written_by_the_synthesizer_of_the_heads_plugin) {
    // gemma4-assistant is no model architecture: the gemma4 plugin registers it as the file
    // architecture of its draft head, and its synthesizer writes it
    const std::string out = temp_file("assistant.gguf");
    CliRun r = tandem({"synth", "--arch", "gemma4-assistant", "--preset", "tiny-31b", "-o", out});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("wrote " + out + ": gemma4-assistant tiny-31b")) << r.err;
    // found through the head's plugin: a copy of it without a synthesizer is named
    const std::string dir = test::make_temp_dir("synth-cli-head");
    fs::copy_file(TANDEM_GEMMA4_PLUGIN, dir + "/tandem-gemma4.so", fs::copy_options::overwrite_existing);
    r = tandem({"synth", "--plugin-path", dir, "--arch", "gemma4-assistant", "-o", temp_file("head.gguf")});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("architecture 'gemma4-assistant' comes from plugin 'gemma4' (" + dir +
                      "/tandem-gemma4.so), which has no synthesizer (no " + dir + "/synth/tandem-gemma4-synth.so)"))
        << r.err;
}

TEST(SynthCli, a_plugin_without_a_synthesizer_is_named_with_the_file_looked_for) {
    const std::string dir = plugin_dir("none");
    CliRun r = tandem({"synth", "--plugin-path", dir, "-o", temp_file("none.gguf")});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("architecture 'qwen3' comes from plugin 'qwen-nextn' (" + dir +
                      "/tandem-qwen-nextn.so), which has no synthesizer (no " + dir +
                      "/synth/tandem-qwen-nextn-synth.so)"))
        << r.err;
    EXPECT_FALSE(fs::exists(temp_file("none.gguf")));
    // `tandem plugins` shows no synthesizer for it, and the build tree's qwen-nextn is shadowed
    r = tandem({"plugins", "--plugin-path", dir, "--output-format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    bool seen = false;
    for (const auto& p : j["plugins"])
        if (p["path"] == dir + "/tandem-qwen-nextn.so") {
            seen = true;
            EXPECT_TRUE(p["synthesizer"].is_null()) << p.dump();
        }
    EXPECT_TRUE(seen) << r.out;
}

TEST(SynthCli, broken_synthesizers_are_refused_with_the_reason) {
    struct Case {
        std::string tag, file, expect;
    };
    const std::string junk = temp_file("junk.so");
    std::ofstream(junk) << "not a shared object";
    const std::vector<Case> cases = {
        {"junk", junk, "cannot load synthesizer "},
        {"no-entry", std::string(TANDEM_TEST_PLUGIN_DIR) + "/tandem-test-no_entry.so",
         "does not export tdm_synthesizer_negotiate"},
        {"v7", std::string(TANDEM_TEST_SYNTH_DIR) + "/test-synth-v7.so",
         "speaks interface versions 7..9, this host offers 1..1"},
    };
    for (const Case& c : cases) {
        const std::string dir = plugin_dir(c.tag, c.file);
        CliRun r = tandem({"synth", "--plugin-path", dir, "-o", temp_file(c.tag + ".gguf")});
        EXPECT_EQ(r.status, 1) << c.tag;
        EXPECT_TRUE(r.has("synth: plugin 'qwen-nextn': ")) << c.tag << ": " << r.err;
        EXPECT_TRUE(r.has(c.expect)) << c.tag << ": " << r.err;
        EXPECT_TRUE(r.has(dir + "/synth/tandem-qwen-nextn-synth.so")) << c.tag << ": " << r.err;
        // `tandem plugins` marks it, and still lists the plugin itself as loaded
        r = tandem({"plugins", "--plugin-path", dir});
        EXPECT_EQ(r.status, 0) << r.err;
        EXPECT_TRUE(r.has("  synthesizer FAILED (" + dir + "/synth/tandem-qwen-nextn-synth.so)")) << r.out;
        EXPECT_TRUE(r.has(c.expect)) << c.tag << ": " << r.out;
        EXPECT_TRUE(r.has("  " + dir + "/tandem-qwen-nextn.so\n")) << r.out;  // loaded, not FAILED
    }
}

TEST(SynthCli, options_reach_the_synthesizer_exactly_as_given_and_only_those) {
    const std::string dir = plugin_dir("echo", std::string(TANDEM_TEST_SYNTH_DIR) + "/test-synth-echo.so");
    const std::string out = temp_file("echo.txt");
    CliRun r = tandem({"synth", "--plugin-path", dir, "--preset", "small", "--type=q4_K", "--seed", "12345678901",
                       "--tied", "no", "--layers", "3", "--perturbation", "0.1", "--repeating", "--repeat-period",
                       "4", "--residual-decay", "0.5", "--draft-of-seed", "9", "--mtp", "1", "-o", out});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("echoed the request to " + out)) << r.err;
    // spec order; integers in decimal, numbers with 17 digits, booleans and flags true/false;
    // --arch (its default) and --output are request fields; --format was not given
    EXPECT_EQ(test::read_file(out), "arch=qwen3\noutput=" + out +
                                        "\npreset=small\ntype=q4_K\nseed=12345678901\ntied=false\nmtp=true\nlayers=3\n"
                                        "draft-of-seed=9\nperturbation=0.10000000000000001\nresidual-decay=0.5\n"
                                        "repeating=true\nrepeat-period=4\n");
    // an architecture the plugin registers but its synthesizer does not list
    r = tandem({"synth", "--plugin-path", dir, "--arch", "qwen35", "-o", temp_file("echo35.txt")});
    EXPECT_EQ(r.status, 1);
    EXPECT_TRUE(r.has("synth: the synthesizer of plugin 'qwen-nextn' (" + dir +
                      "/synth/tandem-qwen-nextn-synth.so) does not write architecture 'qwen35' (it writes: qwen3)"))
        << r.err;
}

TEST(SynthCli, plugins_shows_the_synthesizer_and_what_it_writes) {
    CliRun r = tandem({"plugins"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.has("  synthesizer " + fs::path(TANDEM_QWEN_SYNTH).string() + " (writes qwen3, qwen35, qwen35moe)"))
        << r.out;
    r = tandem({"plugins", "--output-format", "json"});
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    int with_synth = 0;
    for (const auto& p : j["plugins"]) {
        // the other in-tree plugins with a synthesizer
        if (p["name"] == "gemma4" || p["name"] == "glm-ocr" || p["name"] == "llama" || p["name"] == "eagle3" ||
            p["name"] == "dflash") {
            EXPECT_FALSE(p["synthesizer"].is_null()) << p.dump();
            continue;
        }
        if (p["name"] != "qwen-nextn") {
            EXPECT_TRUE(p["synthesizer"].is_null()) << p.dump();
            continue;
        }
        ++with_synth;
        EXPECT_EQ(p["synthesizer"]["path"], TANDEM_QWEN_SYNTH);
        EXPECT_EQ(p["synthesizer"]["archs"], nlohmann::json({"qwen3", "qwen35", "qwen35moe"}));
        EXPECT_EQ(p["synthesizer"]["error"], "");
    }
    EXPECT_EQ(with_synth, 1) << r.out;
}

TEST(SynthCli, the_companion_negotiates_lists_its_archs_and_returns_its_errors_through_the_interface) {
    auto s = cli::Synthesizer::open(TANDEM_QWEN_SYNTH);
    ASSERT_TRUE(s.ok()) << s.error().message();
    EXPECT_EQ((*s)->name(), "qwen-nextn");
    EXPECT_EQ((*s)->version(), TDM_SYNTH_VERSION);
    EXPECT_EQ((*s)->archs(), (std::vector<std::string>{"qwen3", "qwen35", "qwen35moe"}));
    EXPECT_TRUE((*s)->writes("qwen35moe"));
    EXPECT_FALSE((*s)->writes("llama"));
    const std::string out = temp_file("iface.gguf");
    auto r = (*s)->synthesize("qwen3", out, {{"bogus", "1"}});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message(), "synth: the qwen-nextn synthesizer has no option --bogus");
    r = (*s)->synthesize("qwen3", out, {{"layers", "two"}});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().message(), "synth: --layers: 'two' is not an integer");
    EXPECT_FALSE(fs::exists(out));
    r = (*s)->synthesize("qwen35", out, {{"type", "f32"}, {"layers", "1"}, {"mtp", "false"}});
    ASSERT_TRUE(r.ok()) << r.error().message();
    EXPECT_EQ(*r, "wrote " + out + ": qwen35 tiny, 1 layers, n_embd 64, vocab 512, f32");
    EXPECT_TRUE(fs::exists(out));
    EXPECT_EQ(cli::synthesizer_path("/usr/lib/x/tandem/plugins/tandem-qwen-nextn.so"),
              "/usr/lib/x/tandem/plugins/synth/tandem-qwen-nextn-synth.so");
}

}  // namespace
}  // namespace tdm
