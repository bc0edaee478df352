/* SPDX-License-Identifier: Apache-2.0 */
// host/config/memory_size.h: memory sizes as people write them in config files and on the
// command line ("512MiB", "8GiB", "1.5G", "4096"). Not a general unit parser.
//
// Units, case-insensitive, optional space before them:
//   (none), B                      bytes
//   K, Ki, KiB / M, Mi, MiB / ...   powers of 1024 (a bare letter means binary, as in
//                                   llama.cpp's and most tools' memory options)
//   KB, MB, GB, TB                  powers of 1000 (SI)
// A fraction is allowed with a unit larger than a byte and rounds down to whole bytes.
#pragma once

#include "common/error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace tdm {

// Fails with a message that quotes the text and says what was expected. The message does
// not name the setting; callers add that ("device.memory_limit: ...").
Result<uint64_t> parse_memory_size(std::string_view text);

// The largest binary unit that keeps the number >= 1, up to two decimals: "8 GiB",
// "1.5 GiB", "300 B". For messages; parse_memory_size reads it back to within rounding.
std::string format_memory_size(uint64_t bytes);

}  // namespace tdm
