// SPDX-License-Identifier: Apache-2.0
// host/image/image_resize.cpp: PIL's bicubic resampling (libImaging/Resample.c, 8 bits per
// channel), rewritten from the algorithm's description.
#include "image/image_resize.h"

#include <algorithm>
#include <cmath>

namespace tdm {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // fixed-point weights: room for 8-bit samples and sums

double bicubic(double x) {
    constexpr double a = -0.5;
    x = std::fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
    return 0.0;
}

// For each output position along one axis: the first input sample and the weights of the
// samples from there on.
struct AxisWeights {
    int taps = 0;                 // weights per output position (unused ones are zero)
    std::vector<int> first;       // first input index
    std::vector<int> count;       // samples used
    std::vector<int32_t> weight;  // out_size * taps, fixed point
};

AxisWeights axis_weights(int in_size, int out_size) {
    const double scale = double(in_size) / out_size;
    const double filter_scale = std::max(scale, 1.0);
    const double support = 2.0 * filter_scale;  // the bicubic filter's support is 2
    AxisWeights w;
    w.taps = int(std::ceil(support)) * 2 + 1;
    w.first.resize(size_t(out_size));
    w.count.resize(size_t(out_size));
    w.weight.assign(size_t(out_size) * size_t(w.taps), 0);
    std::vector<double> k(size_t(w.taps));
    const double step = 1.0 / filter_scale;  // PIL multiplies by the reciprocal: the same rounding
    for (int o = 0; o < out_size; ++o) {
        const double center = (o + 0.5) * scale;
        // C casts truncate toward zero; negative starts are clamped to 0 just after.
        const int lo = std::max(int(center - support + 0.5), 0);
        const int hi = std::min(int(center + support + 0.5), in_size);
        const int n = hi - lo;
        double total = 0.0;
        for (int i = 0; i < n; ++i) {
            k[size_t(i)] = bicubic((i + lo - center + 0.5) * step);
            total += k[size_t(i)];
        }
        for (int i = 0; i < n; ++i) {
            const double v = total != 0.0 ? k[size_t(i)] / total : k[size_t(i)];
            const double fixed = v * double(1 << kPrecisionBits);
            w.weight[size_t(o) * size_t(w.taps) + size_t(i)] = int32_t(v < 0 ? fixed - 0.5 : fixed + 0.5);
        }
        w.first[size_t(o)] = lo;
        w.count[size_t(o)] = n;
    }
    return w;
}

uint8_t clip8(int64_t sum) {
    const int64_t v = sum >> kPrecisionBits;  // arithmetic shift: floors, as PIL's table lookup does
    return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

Image resize_horizontal(const Image& in, uint32_t width) {
    const AxisWeights w = axis_weights(int(in.width), int(width));
    Image out;
    out.width = width;
    out.height = in.height;
    out.rgb.resize(size_t(width) * in.height * 3);
    for (uint32_t y = 0; y < in.height; ++y) {
        const uint8_t* row = in.pixel(0, y);
        uint8_t* dst = out.rgb.data() + size_t(y) * width * 3;
        for (uint32_t x = 0; x < width; ++x) {
            const int32_t* k = &w.weight[size_t(x) * size_t(w.taps)];
            const int lo = w.first[x];
            for (int c = 0; c < 3; ++c) {
                int64_t sum = int64_t(1) << (kPrecisionBits - 1);
                for (int i = 0; i < w.count[x]; ++i) sum += int64_t(row[size_t(lo + i) * 3 + size_t(c)]) * k[i];
                dst[size_t(x) * 3 + size_t(c)] = clip8(sum);
            }
        }
    }
    return out;
}

Image resize_vertical(const Image& in, uint32_t height) {
    const AxisWeights w = axis_weights(int(in.height), int(height));
    Image out;
    out.width = in.width;
    out.height = height;
    out.rgb.resize(size_t(in.width) * height * 3);
    const size_t stride = size_t(in.width) * 3;
    for (uint32_t y = 0; y < height; ++y) {
        const int32_t* k = &w.weight[size_t(y) * size_t(w.taps)];
        const uint8_t* top = in.rgb.data() + size_t(w.first[y]) * stride;
        uint8_t* dst = out.rgb.data() + size_t(y) * stride;
        for (size_t i = 0; i < stride; ++i) {
            int64_t sum = int64_t(1) << (kPrecisionBits - 1);
            for (int j = 0; j < w.count[y]; ++j) sum += int64_t(top[size_t(j) * stride + i]) * k[j];
            dst[i] = clip8(sum);
        }
    }
    return out;
}

}  // namespace

Image resize_bicubic(const Image& in, uint32_t width, uint32_t height) {
    TDM_ASSERT_MSG(width > 0 && height > 0 && in.width > 0 && in.height > 0, "resize_bicubic: an empty size");
    if (width == in.width && height == in.height) return in;
    if (width == in.width) return resize_vertical(in, height);
    Image h = resize_horizontal(in, width);
    return height == in.height ? h : resize_vertical(h, height);
}

}  // namespace tdm
