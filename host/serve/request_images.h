/* SPDX-License-Identifier: Apache-2.0 */
// host/serve/request_images.h: a chat request's images on their way from the HTTP worker to
// the engine, for a model with an image encoder (GLM-OCR). The worker puts each image's place
// (the encoder's begin, placeholder and end tokens) into its message's text where its
// image_url part was, checks that the tokenized prompt holds exactly those places, and
// preprocesses the images into patches (CPU work, beside the engine). The engine thread,
// which owns the device, runs the encoder and expands each place to its image's rows before
// the session joins the batch. Not here: reading the parts from the request
// (serve/image_url.h), preprocessing and encoding themselves (serve/image_inputs.h).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/batch_engine.h"
#include "serve/backend.h"
#include "serve/image_inputs.h"

namespace tdm::server {

// What the served model offers for images.
struct ImageSupport {
    Encoder* encoder = nullptr;  // null: the model takes no images
    PatchProcessorConfig processor;
    std::string missing;  // encoder null: why (the 400 says it)
};

// The images in the request's messages.
size_t count_images(const GenerationRequest& request);

// A 400 for a request with images to a model without an encoder; nothing otherwise.
std::optional<ApiError> refuse_images(const GenerationRequest& request, const ImageSupport& support);

// The message's text with `place` inserted where each of its images sat.
std::string text_with_image_places(const ChatMessage& message, const std::string& place);

// The tokenized prompt of a chat request to a model with an encoder: checks that it holds one
// place per image (none in a text-only one), then moves the request's images out,
// preprocessed in order, into job.images.
std::optional<ApiError> prepare_images(GenerationRequest& request, const ImageSupport& support,
                                       const Tokenizer& tokenizer, Job& job);

// The job's prompt length with each image place expanded to its image's rows.
size_t expanded_prompt_size(const Job& job);

// Engine thread: encodes the images and expands the session's prompt (one place per image)
// to their rows. Returns the encoder's time in all, in milliseconds.
Result<double> encode_session_images(const ImageSupport& support, const Tokenizer& tokenizer,
                                     const std::vector<ImagePatches>& images, SessionRequest& session);

}  // namespace tdm::server
