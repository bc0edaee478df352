// SPDX-License-Identifier: Apache-2.0
// host/synth/synth_files.cpp
#include "synth/synth_files.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace tdm::synth {

bool is_synth_weight_type(DType t) {
    switch (t) {
        case DType::F32:
        case DType::F16:
        case DType::BF16:
        case DType::Q8_0:
        case DType::Q4_0:
        case DType::Q5_0:
        case DType::Q5_1:
        case DType::Q4_K:
        case DType::Q5_K:
        case DType::Q6_K:
            return true;
        default:
            return false;
    }
}

bool is_hf_weight_type(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16; }

DType gguf_row_type(DType want, int64_t ne0) {
    if (ne0 % int64_t(traits(want).block_size) == 0) return want;
    DType fallback = DType::F16;
    if (want == DType::Q4_K) fallback = DType::Q5_0;
    if (want == DType::Q5_K) fallback = DType::Q5_1;
    if (want == DType::Q6_K) fallback = DType::Q8_0;
    if (ne0 % int64_t(traits(fallback).block_size) == 0) return fallback;
    return DType::F16;
}

uint32_t gguf_file_type(DType t) {
    switch (t) {
        case DType::F16: return 1;
        case DType::Q4_0: return 2;
        case DType::Q8_0: return 7;
        case DType::Q5_0: return 8;
        case DType::Q5_1: return 9;
        case DType::Q4_K: return 15;
        case DType::Q5_K: return 17;
        case DType::Q6_K: return 18;
        case DType::BF16: return 32;
        default: return 0;
    }
}

std::string_view safetensors_dtype_name(DType t) {
    return t == DType::F16 ? "F16" : t == DType::BF16 ? "BF16" : "F32";
}

std::string_view torch_dtype_name(DType t) {
    return t == DType::F16 ? "float16" : t == DType::BF16 ? "bfloat16" : "float32";
}

nlohmann::ordered_json json_number(float f) {
    if (std::floor(f) == f && std::fabs(f) < 1e15f) return int64_t(f);
    return std::stod(fmt::format("{}", f));
}

Status make_directory(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return Error::format("{}: cannot create directory: {}", dir, ec.message());
    return {};
}

Status write_text_file(const std::string& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary);
    out << text;
    out.close();
    if (!out) return Error::format("{}: cannot write", path);
    return {};
}

}  // namespace tdm::synth
