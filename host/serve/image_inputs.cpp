// SPDX-License-Identifier: Apache-2.0
// host/serve/image_inputs.cpp
#include "serve/image_inputs.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "common/file_read.h"
#include "image/image_resize.h"

namespace tdm {
namespace {

std::string token_text(const Tokenizer& tok, int32_t id) { return id >= 0 ? tok.token_text(id) : std::string(); }

}  // namespace

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

Result<ImagePatches> preprocess_image(const Image& image, const PatchProcessorConfig& cfg) {
    const ResizedSize size = TDM_TRY(smart_resize(image.height, image.width, cfg));
    const uint64_t n = uint64_t(size.height / cfg.patch_size) * (size.width / cfg.patch_size);
    if (n > Encoder::kMaxPatches)
        return Error::format("a {}x{} image resized to {}x{} is {} patches, more than the encoder takes ({})",
                             image.width, image.height, size.width, size.height, n, Encoder::kMaxPatches);
    return patches_of_resized(resize_bicubic(image, size.width, size.height), cfg);
}

Result<EncodedImage> encode_patches(Encoder& encoder, const ImagePatches& patches) {
    return encoder.encode(patches.values, patches.grid_t, patches.grid_h, patches.grid_w);
}

Result<EncodedImage> encode_page(Encoder& encoder, const PatchProcessorConfig& cfg, const Image& image,
                                 double* preprocess_ms) {
    const auto t0 = std::chrono::steady_clock::now();
    const ImagePatches patches = TDM_TRY(preprocess_image(image, cfg));
    if (preprocess_ms)
        *preprocess_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    return encode_patches(encoder, patches);
}

std::string image_place_text(const Tokenizer& tokenizer, const tdm_encoder_info& info) {
    return token_text(tokenizer, info.image_begin_token) + token_text(tokenizer, info.image_token) +
           token_text(tokenizer, info.image_end_token);
}

size_t count_image_places(std::span<const int32_t> ids, const tdm_encoder_info& info) {
    return size_t(std::count(ids.begin(), ids.end(), info.image_token));
}

Result<ImagePrompt> place_images(std::span<const int32_t> ids, const Tokenizer& tokenizer,
                                 const tdm_encoder_info& info, std::vector<EncodedImage> images) {
    const size_t places = count_image_places(ids, info);
    if (places != images.size())
        return Error::format("the prompt holds {} image tokens for {} images: the text or the chat template has its "
                             "own '{}'",
                             places, images.size(), token_text(tokenizer, info.image_token));
    ImagePrompt p;
    PromptImages im = TDM_TRY(PromptImages::expand(ids, info.image_token, std::move(images), &p.tokens));
    p.images = std::make_shared<const PromptImages>(std::move(im));
    return p;
}

}  // namespace tdm
