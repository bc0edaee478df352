/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/image_prompt.h: what `tandem ocr` and `tandem run --image` share: the target's
// image encoder (from --mmproj or the model's own files), the pages of the input files (a
// PNG or JPEG is one page, a PDF one per page, rendered at a chosen dpi and one at a time,
// so a broken page does not lose the others), preprocessing a page into the encoder's
// patches, and a prompt of one user turn in the model's chat template with the images
// before the text, each image's placeholder repeated once per encoder row.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "engine/prompt_images.h"
#include "image/image.h"
#include "image/patch_processor.h"
#include "image/pdf_pages.h"
#include "model/encoder.h"

namespace tdm::cli {

// The encoder for `model`: its weights from --mmproj ([model] mmproj_path) or from the model's
// own source. The error says when the model takes no images.
Result<std::unique_ptr<Encoder>> load_encoder(App& app, const Model& model);

// Preprocessing for `encoder`: its own geometry and normalisation, with the resize budget and
// normalisation of a preprocessor_config.json beside an HF model (as transformers reads it).
Result<PatchProcessorConfig> processor_for(const Encoder& encoder, const std::string& model_path);

// One page of an input file.
struct PageRef {
    std::string file;
    int page = 1;     // 1-based
    int n_pages = 1;  // of its file
    bool pdf = false;
};

// The pages of the files, in order. A PDF that cannot be opened (damaged, encrypted, not a
// PDF) is one page whose render() fails, so that the other files still run.
class PageSource {
public:
    explicit PageSource(float pdf_dpi) : dpi_(pdf_dpi) {}
    std::vector<PageRef> pages(const std::vector<std::string>& files);
    Result<Image> render(const PageRef& page);

private:
    float dpi_;
    std::map<std::string, Result<PdfDocument>> pdfs_;
};

// The page through the processor and the encoder; *preprocess_ms gets the decode-free part
// (resize and patches), the EncodedImage its encode time.
Result<EncodedImage> encode_page(Encoder& encoder, const PatchProcessorConfig& cfg, const Image& image,
                                 double* preprocess_ms = nullptr);

struct ImagePrompt {
    std::vector<int32_t> tokens;
    std::shared_ptr<const PromptImages> images;
};

// One user turn holding the images (each as the encoder's begin, placeholder and end tokens)
// and then `text`, in the model's chat template with the assistant's turn opened; each
// placeholder then stands for its image's rows.
// `system`, when not empty, is a system message before the turn.
Result<ImagePrompt> build_image_prompt(const Config& config, const Model& model, const Encoder& encoder,
                                       std::vector<EncodedImage> images, const std::string& text,
                                       const std::string& system = {});

}  // namespace tdm::cli
