// SPDX-License-Identifier: Apache-2.0
// host/cli/image_prompt.cpp
#include "cli/image_prompt.h"

#include <chrono>
#include <filesystem>

#include "cli/prompt.h"
#include "common/file_read.h"
#include "image/image_resize.h"

namespace tdm::cli {
namespace {

std::string token_text(const Tokenizer& tok, int32_t id) { return id >= 0 ? tok.token_text(id) : std::string(); }

}  // namespace

Result<std::unique_ptr<Encoder>> load_encoder(App& app, const Model& model) {
    const Config& cfg = app.config();
    Registry* reg = TDM_TRY(app.registry());
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    std::shared_ptr<const ModelSource> src = model.shared_source();
    if (!cfg.model.mmproj_path.empty())
        src = std::shared_ptr<const ModelSource>(TDM_TRY_CTX(ModelSource::open(cfg.model.mmproj_path), "--mmproj"));
    return Encoder::load(*reg, src, model, *dev, *pm, cfg.model.check_weights);
}

Result<PatchProcessorConfig> processor_for(const Encoder& encoder, const std::string& model_path) {
    const tdm_encoder_info& info = encoder.info();
    PatchProcessorConfig c;
    c.patch_size = info.patch_size;
    c.merge_size = info.merge_size;
    c.temporal_patch_size = info.temporal_patch;
    if (info.min_pixels) c.min_pixels = info.min_pixels;
    if (info.max_pixels) c.max_pixels = info.max_pixels;
    for (int i = 0; i < 3; ++i) c.mean[size_t(i)] = info.image_mean[i], c.std[size_t(i)] = info.image_std[i];
    const std::filesystem::path pre = std::filesystem::path(model_path) / "preprocessor_config.json";
    std::error_code ec;
    if (std::filesystem::is_directory(model_path, ec) && std::filesystem::exists(pre, ec)) {
        const std::string text = TDM_TRY(read_regular_file(pre.string(), 1 << 20, "preprocessor config"));
        const PatchProcessorConfig file = TDM_TRY_CTX(patch_config_from_json(text, c), pre.string());
        if (file.patch_size != c.patch_size || file.merge_size != c.merge_size ||
            file.temporal_patch_size != c.temporal_patch_size)
            return Error::format("{}: patch {} / merge {} / temporal {} differ from the encoder's {} / {} / {}",
                                 pre.string(), file.patch_size, file.merge_size, file.temporal_patch_size,
                                 c.patch_size, c.merge_size, c.temporal_patch_size);
        c = file;
    }
    // a budget the encoder cannot take would only be refused after a resize of that size
    const uint64_t most = uint64_t(Encoder::kMaxPatches) * c.patch_size * c.patch_size;
    if (c.max_pixels > most || c.min_pixels > c.max_pixels)
        return Error::format("encoder {}: a pixel budget of {} .. {} is outside what it takes (at most {} pixels, "
                             "{} patches)",
                             encoder.name(), c.min_pixels, c.max_pixels, most, Encoder::kMaxPatches);
    return c;
}

std::vector<PageRef> PageSource::pages(const std::vector<std::string>& files) {
    std::vector<PageRef> out;
    for (const std::string& f : files) {
        if (!starts_as_pdf(f)) {
            out.push_back({f, 1, 1, false});
            continue;
        }
        auto [it, fresh] = pdfs_.try_emplace(f, PdfDocument::open(f));
        const int n = it->second.ok() ? it->second->pages() : 0;
        if (n == 0) {  // render() says why
            out.push_back({f, 1, 1, true});
            continue;
        }
        for (int p = 1; p <= n; ++p) out.push_back({f, p, n, true});
    }
    return out;
}

Result<Image> PageSource::render(const PageRef& page) {
    if (!page.pdf) return load_image(page.file);
    auto it = pdfs_.find(page.file);
    if (it == pdfs_.end()) it = pdfs_.try_emplace(page.file, PdfDocument::open(page.file)).first;
    if (!it->second.ok()) return it->second.error();
    if (it->second->pages() == 0) return Error::format("{}: the PDF has no pages", page.file);
    return it->second->render(page.page - 1, dpi_);
}

Result<EncodedImage> encode_page(Encoder& encoder, const PatchProcessorConfig& cfg, const Image& image,
                                 double* preprocess_ms) {
    const auto t0 = std::chrono::steady_clock::now();
    const ResizedSize size = TDM_TRY(smart_resize(image.height, image.width, cfg));
    const uint64_t n = uint64_t(size.height / cfg.patch_size) * (size.width / cfg.patch_size);
    if (n > Encoder::kMaxPatches)
        return Error::format("a {}x{} image resized to {}x{} is {} patches, more than the encoder takes ({})",
                             image.width, image.height, size.width, size.height, n, Encoder::kMaxPatches);
    const ImagePatches patches = patches_of_resized(resize_bicubic(image, size.width, size.height), cfg);
    if (preprocess_ms)
        *preprocess_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return encoder.encode(patches.values, patches.grid_t, patches.grid_h, patches.grid_w);
}

Result<ImagePrompt> build_image_prompt(const Config& config, const Model& model, const Encoder& encoder,
                                       std::vector<EncodedImage> images, const std::string& text,
                                       const std::string& system) {
    const Tokenizer* tok = model.tokenizer();
    if (!tok) return Error::format("the model has no tokenizer ({}): an image prompt needs one", model.tokenizer_error());
    const tdm_encoder_info& info = encoder.info();
    std::string content;
    for (size_t i = 0; i < images.size(); ++i)
        content += token_text(*tok, info.image_begin_token) + token_text(*tok, info.image_token) +
                   token_text(*tok, info.image_end_token);
    content += text;
    const ChatTemplate tmpl = TDM_TRY(chat_template_for(config, model));
    std::vector<ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    messages.push_back({"user", content});
    const std::string rendered = TDM_TRY(tmpl.apply(messages, true));
    const std::vector<int32_t> ids = tok->encode(rendered, true, true);
    const size_t places = size_t(std::count(ids.begin(), ids.end(), info.image_token));
    if (places != images.size())
        return Error::format("the prompt holds {} image tokens for {} images: the text or the chat template has its "
                             "own '{}'",
                             places, images.size(), token_text(*tok, info.image_token));
    ImagePrompt p;
    PromptImages im = TDM_TRY(PromptImages::expand(ids, info.image_token, std::move(images), &p.tokens));
    p.images = std::make_shared<const PromptImages>(std::move(im));
    return p;
}

}  // namespace tdm::cli
