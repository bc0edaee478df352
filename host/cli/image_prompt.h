/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/image_prompt.h: what `tandem ocr`, `tandem run --image` and `tandem serve` share
// in the CLI: the target's image encoder (from --mmproj or the model's own files), the pages
// of the input files (a PNG or JPEG is one page, a PDF one per page, rendered at a chosen dpi
// and one at a time, so a broken page does not lose the others), and a prompt of one user
// turn in the model's chat template with the images before the text, each image's
// placeholder repeated once per encoder row. Preprocessing and encoding a page, and placing
// images in a prompt, are the server's too (serve/image_inputs.h).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "image/image.h"
#include "image/pdf_pages.h"
#include "model/encoder.h"
#include "serve/image_inputs.h"

namespace tdm::cli {

// The encoder for `model`: its weights from --mmproj ([model] mmproj_path) or from the model's
// own source. The error says when the model takes no images.
Result<std::unique_ptr<Encoder>> load_encoder(App& app, const Model& model);

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

// One user turn holding the images (each as the encoder's begin, placeholder and end tokens)
// and then `text`, in the model's chat template with the assistant's turn opened; each
// placeholder then stands for its image's rows.
// `system`, when not empty, is a system message before the turn.
Result<ImagePrompt> build_image_prompt(const Config& config, const Model& model, const Encoder& encoder,
                                       std::vector<EncodedImage> images, const std::string& text,
                                       const std::string& system = {});

}  // namespace tdm::cli
