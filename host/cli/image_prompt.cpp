// SPDX-License-Identifier: Apache-2.0
// host/cli/image_prompt.cpp
#include "cli/image_prompt.h"

#include "cli/prompt.h"

namespace tdm::cli {

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

Result<ImagePrompt> build_image_prompt(const Config& config, const Model& model, const Encoder& encoder,
                                       std::vector<EncodedImage> images, const std::string& text,
                                       const std::string& system) {
    const Tokenizer* tok = model.tokenizer();
    if (!tok) return Error::format("the model has no tokenizer ({}): an image prompt needs one", model.tokenizer_error());
    std::string content;
    for (size_t i = 0; i < images.size(); ++i) content += image_place_text(*tok, encoder.info());
    content += text;
    const ChatTemplate tmpl = TDM_TRY(chat_template_for(config, model));
    std::vector<ChatMessage> messages;
    if (!system.empty()) messages.push_back({"system", system});
    messages.push_back({"user", content});
    const std::string rendered = TDM_TRY(tmpl.apply(messages, true));
    return place_images(tok->encode(rendered, true, true), *tok, encoder.info(), std::move(images));
}

}  // namespace tdm::cli
