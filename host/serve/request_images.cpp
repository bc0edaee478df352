// SPDX-License-Identifier: Apache-2.0
// host/serve/request_images.cpp
#include "serve/request_images.h"

#include <fmt/format.h>

namespace tdm::server {

size_t count_images(const GenerationRequest& request) {
    size_t n = 0;
    for (const ChatMessage& m : request.messages) n += m.images.size();
    return n;
}

std::optional<ApiError> refuse_images(const GenerationRequest& request, const ImageSupport& support) {
    if (support.encoder) return std::nullopt;
    for (size_t i = 0; i < request.messages.size(); ++i)
        if (!request.messages[i].images.empty())
            return ApiError::invalid(
                fmt::format("messages[{}].content", i),
                fmt::format("this model takes no images (image_url or file parts): {}",
                            support.missing.empty() ? "it has no image encoder" : support.missing));
    return std::nullopt;
}

std::string text_with_image_places(const ChatMessage& message, const std::string& place) {
    if (message.images.empty()) return message.content;
    std::string out;
    size_t at = 0;
    for (const MessageImage& image : message.images) {
        out.append(message.content, at, image.offset - at);
        out += place;
        at = image.offset;
    }
    out.append(message.content, at);
    return out;
}

std::optional<ApiError> prepare_images(GenerationRequest& request, const ImageSupport& support,
                                       const Tokenizer& tokenizer, Job& job) {
    if (!support.encoder) return std::nullopt;  // refuse_images has refused any image
    const size_t n = count_images(request);
    const tdm_encoder_info& info = support.encoder->info();
    // a placeholder written in the text would read as an image's place (with none behind it)
    if (const size_t places = count_image_places(job.prompt, info); places != n)
        return ApiError::invalid("messages", fmt::format("the prompt holds {} image places for {} images: the text "
                                                         "holds the image placeholder '{}' itself",
                                                         places, n, tokenizer.token_text(info.image_token)));
    if (n == 0) return std::nullopt;
    auto patches = std::make_shared<std::vector<ImagePatches>>();
    for (size_t i = 0; i < request.messages.size(); ++i) {
        for (MessageImage& image : request.messages[i].images) {
            auto p = preprocess_image(image.image, support.processor);
            if (!p.ok())
                return ApiError::invalid(fmt::format("messages[{}].content", i),
                                         fmt::format("image {} of the request: {}", patches->size() + 1,
                                                     p.error().message()));
            patches->push_back(std::move(*p));
        }
        request.messages[i].images.clear();  // the patches are what the engine needs
    }
    job.images = std::move(patches);
    return std::nullopt;
}

size_t expanded_prompt_size(const Job& job) {
    size_t n = job.prompt.size();
    if (job.images)
        for (const ImagePatches& p : *job.images) n += size_t(p.merged_tokens()) - 1;
    return n;
}

Result<double> encode_session_images(const ImageSupport& support, const Tokenizer& tokenizer,
                                     const std::vector<ImagePatches>& images, SessionRequest& session) {
    std::vector<EncodedImage> encoded;
    double ms = 0;
    for (const ImagePatches& p : images) {
        encoded.push_back(TDM_TRY(encode_patches(*support.encoder, p)));
        ms += encoded.back().encode_ms;
    }
    ImagePrompt prompt = TDM_TRY(place_images(session.prompt, tokenizer, support.encoder->info(), std::move(encoded)));
    session.prompt = std::move(prompt.tokens);
    session.images = std::move(prompt.images);
    return ms;
}

}  // namespace tdm::server
