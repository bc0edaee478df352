// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_bench_image.cpp: `tandem bench image FILE...`: what turning pages into a
// vision encoder's input costs, per page: decoding (PNG, JPEG, or a PDF page rendered at
// --pdf-dpi), the smart resize, and normalisation into patches, with the patch grid and the
// number of image tokens the page becomes. Medians of --iterations runs.
#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/bench_common.h"
#include "common/file_read.h"
#include "image/image.h"
#include "image/image_resize.h"
#include "image/patch_processor.h"
#include "image/pdf_pages.h"

namespace tdm::cli {

namespace {

struct PageTimes {
    std::vector<double> decode, resize, patches;
};

// One page, `iterations` times: decoded by `decode`, then preprocessed; the medians and sizes.
template <class Decode>
Result<nlohmann::json> bench_page(const Decode& decode, const PatchProcessorConfig& cfg, int iterations) {
    PageTimes t;
    Image img;
    ImagePatches patches;
    ResizedSize size;
    for (int i = 0; i < iterations; ++i) {
        double t0 = now_s();
        img = TDM_TRY(decode());
        double t1 = now_s();
        size = TDM_TRY(smart_resize(img.height, img.width, cfg));
        const Image resized = resize_bicubic(img, size.width, size.height);
        double t2 = now_s();
        patches = patches_of_resized(resized, cfg);
        double t3 = now_s();
        t.decode.push_back(t1 - t0);
        t.resize.push_back(t2 - t1);
        t.patches.push_back(t3 - t2);
    }
    nlohmann::json j;
    j["width"] = img.width;
    j["height"] = img.height;
    j["resized_width"] = size.width;
    j["resized_height"] = size.height;
    j["grid"] = {patches.grid_h, patches.grid_w};
    j["patches"] = patches.rows();
    j["image_tokens"] = patches.merged_tokens();
    j["decode_ms"] = 1e3 * median(t.decode);
    j["resize_ms"] = 1e3 * median(t.resize);
    j["patches_ms"] = 1e3 * median(t.patches);
    j["total_ms"] = j["decode_ms"].get<double>() + j["resize_ms"].get<double>() + j["patches_ms"].get<double>();
    return j;
}

}  // namespace

Status bench_image(App& app) {
    const ParsedArgs& a = app.args();
    const std::vector<std::string> files(a.positionals().begin() + 1, a.positionals().end());
    if (files.empty()) return Error("bench image: give one or more PNG, JPEG or PDF files");
    const int iterations = int(a.get_int("iterations").value_or(9));
    const double dpi = a.get_number("pdf-dpi").value_or(200.0);
    PatchProcessorConfig cfg;
    if (auto p = a.get_string("preprocessor")) {
        const std::string text = TDM_TRY(read_regular_file(*p, 1 << 20, "preprocessor config"));
        cfg = TDM_TRY_CTX(patch_config_from_json(text), *p);
    }
    nlohmann::json j;
    j["iterations"] = iterations;
    j["pdf_dpi"] = dpi;
    j["pixel_budget"] = {cfg.min_pixels, cfg.max_pixels};
    j["pages"] = nlohmann::json::array();
    for (const std::string& path : files) {
        if (starts_as_pdf(path)) {
            const PdfDocument doc = TDM_TRY(PdfDocument::open(path));
            for (int page = 0; page < doc.pages(); ++page) {
                nlohmann::json r = TDM_TRY(bench_page([&] { return doc.render(page, dpi); }, cfg, iterations));
                r["file"] = path;
                r["page"] = page + 1;
                j["pages"].push_back(r);
            }
        } else {
            nlohmann::json r = TDM_TRY(bench_page([&] { return load_image(path); }, cfg, iterations));
            r["file"] = path;
            r["page"] = 1;
            j["pages"].push_back(r);
        }
    }
    if (a.flag("json")) {
        std::printf("%s\n", j.dump(2).c_str());
        return {};
    }
    std::printf("%-32s %4s %11s %11s %7s %7s %10s %10s %10s %10s\n", "file", "page", "pixels", "resized", "patches",
                "tokens", "decode", "resize", "patches", "total");
    for (const auto& r : j["pages"]) {
        std::string name = r["file"].get<std::string>();
        if (name.size() > 32) name = "..." + name.substr(name.size() - 29);
        std::printf("%-32s %4d %5ux%-5u %5ux%-5u %7u %7u %8.1fms %8.1fms %8.1fms %8.1fms\n", name.c_str(),
                    r["page"].get<int>(), r["width"].get<uint32_t>(), r["height"].get<uint32_t>(),
                    r["resized_width"].get<uint32_t>(), r["resized_height"].get<uint32_t>(),
                    r["patches"].get<uint32_t>(), r["image_tokens"].get<uint32_t>(), r["decode_ms"].get<double>(),
                    r["resize_ms"].get<double>(), r["patches_ms"].get<double>(), r["total_ms"].get<double>());
    }
    return {};
}

}  // namespace tdm::cli
