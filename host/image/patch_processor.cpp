// SPDX-License-Identifier: Apache-2.0
// host/image/patch_processor.cpp: smart resize, normalisation and patch order of the GLM-4V
// image processor.
#include "image/patch_processor.h"

#include "image/image_resize.h"

#include <nlohmann/json.hpp>

#include <cmath>

namespace tdm {

namespace {

// Python's round() on a float: halves go to the even neighbour.
double round_half_even(double x) { return std::nearbyint(x); }

Result<uint64_t> positive_field(const nlohmann::json& j, const char* key, uint64_t fallback) {
    if (!j.contains(key)) return fallback;
    const nlohmann::json& v = j[key];
    if (!v.is_number_integer() || v.get<int64_t>() <= 0)
        return Error::format("preprocessor config: '{}' must be a positive integer, not {}", key, v.dump());
    return v.get<uint64_t>();
}

Result<std::array<float, 3>> channel_triple(const nlohmann::json& j, const char* key, std::array<float, 3> fallback) {
    if (!j.contains(key)) return fallback;
    const nlohmann::json& v = j[key];
    if (v.is_number()) return std::array<float, 3>{v.get<float>(), v.get<float>(), v.get<float>()};
    if (!v.is_array() || v.size() != 3 || !v[0].is_number() || !v[1].is_number() || !v[2].is_number())
        return Error::format("preprocessor config: '{}' must be three numbers (R, G, B), not {}", key, v.dump());
    return std::array<float, 3>{v[0].get<float>(), v[1].get<float>(), v[2].get<float>()};
}

}  // namespace

Result<PatchProcessorConfig> patch_config_from_json(std::string_view json_text, const PatchProcessorConfig& base) {
    const nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return Error("preprocessor config: not a JSON object");
    PatchProcessorConfig cfg = base;
    cfg.patch_size = uint32_t(TDM_TRY(positive_field(j, "patch_size", cfg.patch_size)));
    cfg.merge_size = uint32_t(TDM_TRY(positive_field(j, "merge_size", cfg.merge_size)));
    cfg.temporal_patch_size = uint32_t(TDM_TRY(positive_field(j, "temporal_patch_size", cfg.temporal_patch_size)));
    if (cfg.patch_size > 1024 || cfg.merge_size > 16 || cfg.temporal_patch_size > 16)
        return Error::format("preprocessor config: patch_size {}, merge_size {}, temporal_patch_size {} are out of range",
                             cfg.patch_size, cfg.merge_size, cfg.temporal_patch_size);
    cfg.min_pixels = TDM_TRY(positive_field(j, "min_pixels", cfg.min_pixels));
    cfg.max_pixels = TDM_TRY(positive_field(j, "max_pixels", cfg.max_pixels));
    if (j.contains("size")) {
        const nlohmann::json& size = j["size"];
        if (!size.is_object()) return Error("preprocessor config: 'size' must be an object");
        cfg.min_pixels = TDM_TRY(positive_field(size, "shortest_edge", cfg.min_pixels));
        cfg.max_pixels = TDM_TRY(positive_field(size, "longest_edge", cfg.max_pixels));
        cfg.min_pixels = TDM_TRY(positive_field(size, "min_pixels", cfg.min_pixels));
        cfg.max_pixels = TDM_TRY(positive_field(size, "max_pixels", cfg.max_pixels));
    }
    if (cfg.min_pixels > cfg.max_pixels)
        return Error::format("preprocessor config: the pixel budget's minimum {} is above its maximum {}",
                             cfg.min_pixels, cfg.max_pixels);
    if (j.contains("rescale_factor")) {
        if (!j["rescale_factor"].is_number() || j["rescale_factor"].get<double>() <= 0)
            return Error("preprocessor config: 'rescale_factor' must be a positive number");
        cfg.rescale_factor = j["rescale_factor"].get<double>();
    }
    cfg.mean = TDM_TRY(channel_triple(j, "image_mean", cfg.mean));
    cfg.std = TDM_TRY(channel_triple(j, "image_std", cfg.std));
    for (float s : cfg.std)
        if (!(s > 0.0f) || !std::isfinite(s)) return Error("preprocessor config: every 'image_std' must be positive");
    return cfg;
}

Result<ResizedSize> smart_resize(uint32_t height_in, uint32_t width_in, const PatchProcessorConfig& cfg) {
    if (height_in == 0 || width_in == 0) return Error::format("an image of {} x {} pixels is empty", width_in, height_in);
    const double factor = double(cfg.patch_size) * cfg.merge_size;
    const double frames = cfg.temporal_patch_size;  // num_frames == temporal_factor for a still image
    double height = height_in, width = width_in;
    if (height < factor || width < factor) {
        const double scale = std::max(factor / height, factor / width);
        height = std::trunc(height * scale);
        width = std::trunc(width * scale);
    }
    if (std::max(height, width) / std::min(height, width) > 200)
        return Error::format("an image of {} x {} pixels is too narrow: its aspect ratio is over 200 (the vision "
                             "encoder's limit)",
                             width_in, height_in);
    double h_bar = round_half_even(height / factor) * factor;
    double w_bar = round_half_even(width / factor) * factor;
    const double t_bar = round_half_even(frames / cfg.temporal_patch_size) * cfg.temporal_patch_size;
    if (t_bar * h_bar * w_bar > double(cfg.max_pixels)) {
        const double beta = std::sqrt(frames * height * width / double(cfg.max_pixels));
        h_bar = std::max(factor, std::floor(height / beta / factor) * factor);
        w_bar = std::max(factor, std::floor(width / beta / factor) * factor);
    } else if (t_bar * h_bar * w_bar < double(cfg.min_pixels)) {
        const double beta = std::sqrt(double(cfg.min_pixels) / (frames * height * width));
        h_bar = std::ceil(height * beta / factor) * factor;
        w_bar = std::ceil(width * beta / factor) * factor;
    }
    if (h_bar > 65535 * factor || w_bar > 65535 * factor)
        return Error::format("an image of {} x {} pixels resizes to more than the encoder can take", width_in, height_in);
    return ResizedSize{uint32_t(h_bar), uint32_t(w_bar)};
}

ImagePatches patches_of_resized(const Image& img, const PatchProcessorConfig& cfg) {
    const uint32_t p = cfg.patch_size, m = cfg.merge_size, t = cfg.temporal_patch_size;
    ImagePatches out;
    out.grid_h = img.height / p;
    out.grid_w = img.width / p;
    out.merge_size = m;
    out.values_per_patch = 3 * t * p * p;
    // Normalised planes first, in numpy's float32 order of operations.
    std::vector<float> plane(size_t(img.width) * img.height * 3);
    for (size_t i = 0; i < size_t(img.width) * img.height; ++i)
        for (int c = 0; c < 3; ++c) {
            const float scaled = float(double(img.rgb[i * 3 + size_t(c)]) * cfg.rescale_factor);
            plane[size_t(c) * img.width * img.height + i] = (scaled - cfg.mean[size_t(c)]) / cfg.std[size_t(c)];
        }
    out.values.resize(size_t(out.rows()) * out.values_per_patch);
    float* dst = out.values.data();
    for (uint32_t by = 0; by < out.grid_h / m; ++by)
        for (uint32_t bx = 0; bx < out.grid_w / m; ++bx)
            for (uint32_t my = 0; my < m; ++my)
                for (uint32_t mx = 0; mx < m; ++mx) {
                    const uint32_t y0 = (by * m + my) * p, x0 = (bx * m + mx) * p;
                    for (uint32_t c = 0; c < 3; ++c)
                        for (uint32_t f = 0; f < t; ++f)
                            for (uint32_t py = 0; py < p; ++py) {
                                const float* src = &plane[size_t(c) * img.width * img.height +
                                                          size_t(y0 + py) * img.width + x0];
                                for (uint32_t px = 0; px < p; ++px) *dst++ = src[px];
                            }
                }
    return out;
}

Result<ImagePatches> make_patches(const Image& image, const PatchProcessorConfig& cfg) {
    const ResizedSize size = TDM_TRY(smart_resize(image.height, image.width, cfg));
    return patches_of_resized(resize_bicubic(image, size.width, size.height), cfg);
}

}  // namespace tdm
