/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/image_inputs.h: images as a model's inputs, as `tandem ocr`, `tandem run --image`
// and `tandem serve` all prepare them: the encoder's preprocessing (its geometry and
// normalisation, or a preprocessor_config.json beside an HF model), an image through the
// resize and patches (CPU work, any thread) and the encoder (the device: the thread that owns
// it), and the tokenized prompt's image places, one per image, expanded to the encoder's rows.
//
// In the serving module, not in cli/, so that the server and the CLI's commands share it
// (serving must not depend on the CLI). Not here: loading the encoder (the program does),
// decoding image files or data URLs (image/image.h, serve/image_url.h), a prompt's rows in
// the engine (engine/prompt_images.h).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/prompt_images.h"
#include "image/image.h"
#include "image/patch_processor.h"
#include "model/encoder.h"
#include "tokenizer/tokenizer.h"

namespace tdm {

// Preprocessing for `encoder`: its own geometry and normalisation, with the resize budget and
// normalisation of a preprocessor_config.json beside an HF model (as transformers reads it).
Result<PatchProcessorConfig> processor_for(const Encoder& encoder, const std::string& model_path);

// The image resized within the processor's pixel budget and cut into the encoder's patches.
// Errors: an aspect ratio past 200, more patches than the encoder takes.
Result<ImagePatches> preprocess_image(const Image& image, const PatchProcessorConfig& cfg);

// The patches through the encoder (on the thread that uses the device).
Result<EncodedImage> encode_patches(Encoder& encoder, const ImagePatches& patches);

// preprocess_image then encode_patches; *preprocess_ms gets the first part's time, the
// EncodedImage its encode time.
Result<EncodedImage> encode_page(Encoder& encoder, const PatchProcessorConfig& cfg, const Image& image,
                                 double* preprocess_ms = nullptr);

// The text that stands for one image in a message: the encoder's begin, placeholder and end
// tokens (each placeholder later becomes its image's rows).
std::string image_place_text(const Tokenizer& tokenizer, const tdm_encoder_info& info);

// How many image places `ids` holds.
size_t count_image_places(std::span<const int32_t> ids, const tdm_encoder_info& info);

struct ImagePrompt {
    std::vector<int32_t> tokens;
    std::shared_ptr<const PromptImages> images;
};

// The tokenized prompt with each image place expanded to its image's rows. More or fewer
// places than images (the text or the chat template wrote the placeholder itself): an error
// naming the placeholder.
Result<ImagePrompt> place_images(std::span<const int32_t> ids, const Tokenizer& tokenizer,
                                 const tdm_encoder_info& info, std::vector<EncodedImage> images);

}  // namespace tdm
