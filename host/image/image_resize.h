/* SPDX-License-Identifier: Apache-2.0 */
// host/image/image_resize.h: bicubic resizing that gives PIL's pixels exactly
// (`Image.resize(size, Image.BICUBIC)` on an RGB image, no box, no reducing_gap), which is
// what Hugging Face's PIL image processors call. Reproduced from the algorithm, not
// approximated: the filter (a = -0.5) widened by the scale when shrinking (antialiasing),
// weights normalised per output pixel and rounded to 22-bit fixed point, a horizontal
// pass and then a vertical one, each rounding and clipping to 8 bits.
//
// Usage:
//   Image page = TDM_TRY(load_image(path));
//   Image small = resize_bicubic(page, 812, 1148);
#pragma once

#include "image/image.h"

namespace tdm {

// `in` resized to width x height (both > 0). A side that keeps its size is copied, as PIL
// skips that pass.
Image resize_bicubic(const Image& in, uint32_t width, uint32_t height);

}  // namespace tdm
