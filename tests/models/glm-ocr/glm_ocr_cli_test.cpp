// SPDX-License-Identifier: Apache-2.0
// tests/models/glm-ocr/glm_ocr_cli_test.cpp: `tandem ocr` and `tandem run --image` through the built
// binary on a synthetic GLM-OCR with its vision tower: a PNG, a JPEG and a two-page PDF become
// text, plain and with the MTP head alike, in the HF layout and in the GGUF one (text model plus
// llama.cpp's mmproj file); the output formats and -o; [ocr] in a
// config file; bad pages (corrupt, truncated, empty, huge, encrypted) are reported while the
// good pages still come out; a model without a tower and an encoder for another model are
// refused with a message naming the problem.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>

#include "cli/cli_run.h"
#include "image/image_fixtures.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using nlohmann::json;

const std::string kEnvGlmOcrCli = "TANDEM_LOG=off";

std::string synth(const std::vector<std::string>& extra, const std::string& name) {
    const std::string path = test::make_temp_dir("glmocrcli") + "/" + name;
    std::vector<std::string> args = {"synth", "--arch", "glm4", "-o", path};
    args.insert(args.end(), extra.begin(), extra.end());
    const CliRun r = tandem(args, kEnvGlmOcrCli);
    EXPECT_EQ(r.status, 0) << r.err;
    return path;
}

const std::string& vision_model_glm_ocr_cli() {
    static const std::string m = synth({"--format", "hf", "--vision", "true"}, "hf");
    return m;
}

std::vector<std::string> three_files() {
    return {test::image_fixture_path("rgb8.png"), test::image_fixture_path("baseline.jpg"),
            test::image_fixture_path("two_pages.pdf")};
}

CliRun ocr(const std::string& model, const std::vector<std::string>& files, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"ocr", "-m", model, "-n", "12", "--ignore-eos"};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), files.begin(), files.end());
    return tandem(args, kEnvGlmOcrCli);
}

TEST(GlmOcrCli, a_png_a_jpeg_and_a_two_page_pdf_become_text_plain_and_with_mtp_alike) {
    const CliRun plain = ocr(vision_model_glm_ocr_cli(), three_files(), {"--output-format", "json"});
    ASSERT_EQ(plain.status, 0) << plain.err;
    const CliRun spec = ocr(vision_model_glm_ocr_cli(), three_files(), {"--output-format", "json", "--spec-type", "mtp"});
    ASSERT_EQ(spec.status, 0) << spec.err;
    const json a = json::parse(plain.out, nullptr, false), b = json::parse(spec.out, nullptr, false);
    ASSERT_TRUE(a.is_object() && b.is_object()) << plain.out;
    ASSERT_EQ(a["pages"].size(), 4u);
    ASSERT_EQ(b["pages"].size(), 4u);
    EXPECT_EQ(a["failed"], 0);
    EXPECT_EQ(a["encoder"], "glm-ocr-vision");
    uint64_t drafted = 0;
    for (size_t i = 0; i < 4; ++i) {
        const json& p = a["pages"][i];
        EXPECT_EQ(p["tokens"].size(), 12u);
        EXPECT_FALSE(p["text"].get<std::string>().empty());
        EXPECT_GT(p["image"]["tokens"].get<int>(), 0);
        EXPECT_GT(p["timings"]["encode_ms"].get<double>(), 0.0);
        EXPECT_EQ(p["tokens"], b["pages"][i]["tokens"]) << "page " << i << ": MTP speculation changed the text";
        drafted += b["pages"][i]["speculative"]["drafted_tokens"].get<uint64_t>();
    }
    EXPECT_GT(drafted, 0u);
    EXPECT_EQ(a["pages"][2]["file"], three_files()[2]);
    EXPECT_EQ(a["pages"][2]["page"], 1);
    EXPECT_EQ(a["pages"][3]["page"], 2);
    EXPECT_EQ(a["pages"][3]["pages"], 2);
    // different pages are different images: their image token counts differ here
    EXPECT_NE(a["pages"][2]["image"]["tokens"], a["pages"][3]["image"]["tokens"]);

    // the GGUF layout: the text model and llama.cpp's mmproj file beside it, same weights
    const std::string gguf = synth({"--vision", "true", "--type", "bf16"}, "m.gguf");
    const std::string mmproj = gguf.substr(0, gguf.size() - 6) + "mmproj-m.gguf";
    const CliRun g = ocr(gguf, three_files(), {"--output-format", "json", "--mmproj", mmproj, "--spec-type", "mtp"});
    ASSERT_EQ(g.status, 0) << g.err;
    const json c = json::parse(g.out, nullptr, false);
    ASSERT_TRUE(c.is_object());
    ASSERT_EQ(c["pages"].size(), 4u);
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(c["pages"][i]["tokens"], a["pages"][i]["tokens"]) << "page " << i;
    const CliRun no_mmproj = ocr(gguf, {three_files()[0]}, {});
    EXPECT_EQ(no_mmproj.status, 1);
    EXPECT_TRUE(no_mmproj.has("--mmproj")) << no_mmproj.err;
}

TEST(GlmOcrCli, markdown_text_and_output_file) {
    const CliRun md = ocr(vision_model_glm_ocr_cli(), three_files(), {});
    ASSERT_EQ(md.status, 0) << md.err;
    size_t headings = 0;
    for (size_t at = md.out.find("## "); at != std::string::npos; at = md.out.find("\n## ", at + 1)) ++headings;
    EXPECT_EQ(headings, 4u) << md.out;
    EXPECT_NE(md.out.find("two_pages.pdf, page 2"), std::string::npos);
    EXPECT_NE(md.err.find("image tokens"), std::string::npos) << md.err;  // per-page timings on stderr

    const CliRun txt = ocr(vision_model_glm_ocr_cli(), three_files(), {"--output-format", "text"});
    ASSERT_EQ(txt.status, 0) << txt.err;
    const CliRun js = ocr(vision_model_glm_ocr_cli(), three_files(), {"--output-format", "json"});
    const json pages = json::parse(js.out, nullptr, false)["pages"];
    ASSERT_EQ(pages.size(), 4u);
    std::string want;  // pages separated by form feeds, as pdftotext does
    for (size_t i = 0; i < 4; ++i) want += (i ? "\f" : "") + pages[i]["text"].get<std::string>() + "\n";
    EXPECT_EQ(txt.out, want);

    const std::string path = test::make_temp_dir("ocrout") + "/out.json";
    const CliRun file = ocr(vision_model_glm_ocr_cli(), {three_files()[0]}, {"--output-format", "json", "-o", path});
    ASSERT_EQ(file.status, 0) << file.err;
    EXPECT_TRUE(file.out.empty()) << file.out;
    const json j = json::parse(test::read_file(path), nullptr, false);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["pages"].size(), 1u);
}

TEST(GlmOcrCli, the_config_files_ocr_section_sets_the_defaults) {
    const std::string dir = test::make_temp_dir("ocrtoml");
    {
        std::ofstream f(dir + "/tandem.toml");
        f << "[ocr]\noutput_format = \"json\"\ntask = \"table\"\n";
    }
    const CliRun r = ocr(vision_model_glm_ocr_cli(), {three_files()[0]}, {"--config", dir + "/tandem.toml"});
    ASSERT_EQ(r.status, 0) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["task"], "table");
    EXPECT_EQ(j["prompt"], "Table Recognition:");
    EXPECT_EQ(j["pages"].size(), 1u);

    std::ofstream(dir + "/bad.toml") << "[ocr]\npdf_dpi = 5\n";
    const CliRun bad = ocr(vision_model_glm_ocr_cli(), {three_files()[0]}, {"--config", dir + "/bad.toml"});
    EXPECT_NE(bad.status, 0);
    EXPECT_TRUE(bad.has("ocr.pdf_dpi")) << bad.err;
    // each page's context: [ocr] n_ctx, unless -c is given
    std::ofstream(dir + "/small.toml") << "[ocr]\nn_ctx = 32\n";
    const CliRun small = ocr(vision_model_glm_ocr_cli(), {three_files()[0]}, {"--config", dir + "/small.toml"});
    EXPECT_EQ(small.status, 1);
    EXPECT_TRUE(small.has("the context holds 32")) << small.err;
    const CliRun wider = ocr(vision_model_glm_ocr_cli(), {three_files()[0]}, {"--config", dir + "/small.toml", "-c", "256"});
    EXPECT_EQ(wider.status, 0) << wider.err;
    const CliRun json_task = ocr(vision_model_glm_ocr_cli(), {three_files()[0]}, {"--task", "json"});
    EXPECT_NE(json_task.status, 0);
    EXPECT_TRUE(json_task.has("--schema")) << json_task.err;
}

TEST(GlmOcrCli, bad_pages_are_reported_and_the_good_pages_still_come_out) {
    const std::string dir = test::make_temp_dir("ocrbad");
    const std::vector<uint8_t> png = test::image_fixture("rgb8.png");
    auto write = [&](const std::string& name, const std::vector<uint8_t>& bytes) {
        std::ofstream(dir + "/" + name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                                 std::streamsize(bytes.size()));
        return dir + "/" + name;
    };
    std::vector<uint8_t> flipped = png;
    for (size_t i = 40; i < flipped.size(); i += 7) flipped[i] ^= 0x5a;
    const std::vector<std::string> files = {
        write("truncated.png", std::vector<uint8_t>(png.begin(), png.begin() + long(png.size() / 2))),
        test::image_fixture_path("rgb8.png"),
        write("empty.png", {}),
        write("huge.png", test::png_with_size(png, 100000, 100000)),
        write("flipped.png", flipped),
        test::image_fixture_path("encrypted.pdf"),
        test::image_fixture_path("two_pages.pdf"),
    };
    const CliRun r = ocr(vision_model_glm_ocr_cli(), files, {"--output-format", "json"});
    EXPECT_EQ(r.status, 1) << r.err;
    const json j = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["failed"], 5);
    std::vector<std::string> good;
    for (const json& p : j["pages"])
        if (!p.contains("error")) good.push_back(p["file"].get<std::string>() + "#" + std::to_string(p["page"].get<int>()));
    EXPECT_EQ(good, (std::vector<std::string>{files[1] + "#1", files[6] + "#1", files[6] + "#2"}));
    for (const char* name : {"truncated.png", "empty.png", "huge.png", "flipped.png", "encrypted.pdf"})
        EXPECT_NE(r.err.find(name), std::string::npos) << name << "\n" << r.err;
    EXPECT_TRUE(r.has("larger than the limit")) << r.err;
    EXPECT_TRUE(r.has("encrypted")) << r.err;
    EXPECT_TRUE(r.has("5 of 8 pages failed")) << r.err;
}

TEST(GlmOcrCli, a_model_without_a_tower_and_an_encoder_for_another_model_are_refused) {
    const std::string text_only = synth({"--format", "hf"}, "text-only");
    const CliRun a = ocr(text_only, {three_files()[0]}, {});
    EXPECT_EQ(a.status, 1);
    EXPECT_TRUE(a.has("no vision tower")) << a.err;

    const std::string other = synth({"--format", "hf", "--vision", "true", "--preset", "small"}, "small");
    const CliRun b = ocr(vision_model_glm_ocr_cli(), {three_files()[0]}, {"--mmproj", other});
    EXPECT_EQ(b.status, 1);
    EXPECT_TRUE(b.has("out_hidden_size")) << b.err;

    const CliRun c = ocr(vision_model_glm_ocr_cli(), {three_files()[0]}, {"--mmproj", "/nonexistent/mmproj.gguf"});
    EXPECT_EQ(c.status, 1);
    EXPECT_TRUE(c.has("/nonexistent/mmproj.gguf")) << c.err;

    const CliRun d = tandem({"run", "-m", vision_model_glm_ocr_cli(), "--image", three_files()[2], "-p", "x", "-n", "2"}, kEnvGlmOcrCli);
    EXPECT_EQ(d.status, 1);
    EXPECT_TRUE(d.has("tandem ocr")) << d.err;
}

TEST(GlmOcrCli, run_with_an_image_decodes_what_ocr_decodes_for_that_prompt) {
    const CliRun o = ocr(vision_model_glm_ocr_cli(), {three_files()[1]}, {"--output-format", "json"});
    ASSERT_EQ(o.status, 0) << o.err;
    const CliRun r = tandem({"run", "-m", vision_model_glm_ocr_cli(), "--image", three_files()[1], "-p", "Text Recognition:", "-n",
                             "12", "--ignore-eos", "--temp", "0", "--output-format", "json"},
                            kEnvGlmOcrCli);
    ASSERT_EQ(r.status, 0) << r.err;
    const json a = json::parse(o.out, nullptr, false), b = json::parse(r.out, nullptr, false);
    ASSERT_TRUE(a.is_object() && b.is_object());
    EXPECT_EQ(a["pages"][0]["tokens"], b["tokens"]);
    EXPECT_EQ(a["pages"][0]["n_prompt"], b["n_prompt"]);
}

}  // namespace
}  // namespace tdm
