/* SPDX-License-Identifier: Apache-2.0 */
// host/common/file_read.h: opening and reading files that come from users (models,
// tokenizers, configs, caches, prompt files) without ever blocking on a FIFO or a
// device and without reading without bound. Every such file is checked with fstat on a
// descriptor opened O_NONBLOCK (so opening a FIFO returns at once) and refused unless
// it is a regular file; reads stop at a limit the caller gives.
// Not here: mapping files (formats/mapped_file.h, which opens through open_regular_file).
//
// Usage:
//   std::string text = TDM_TRY(read_regular_file(path, 16 << 20, "config file"));
//   // errors: "config file /x is a FIFO, not a regular file",
//   //         "prompt file /d is a directory, not a regular file",
//   //         "cannot open tokenizer file /t: No such file or directory"
#pragma once

#include "common/error.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace tdm {

// A read-only descriptor of a regular file and its size at open time. Closes on
// destruction; move-only.
class RegularFile {
public:
    RegularFile() = default;
    RegularFile(int fd, uint64_t size) : fd_(fd), size_(size) {}
    ~RegularFile();
    RegularFile(RegularFile&& o) noexcept : fd_(o.fd_), size_(o.size_) { o.fd_ = -1; }
    RegularFile& operator=(RegularFile&& o) noexcept;
    RegularFile(const RegularFile&) = delete;
    RegularFile& operator=(const RegularFile&) = delete;

    int fd() const { return fd_; }
    uint64_t size() const { return size_; }
    // Gives up ownership of the descriptor (the caller closes it).
    int release() {
        const int fd = fd_;
        fd_ = -1;
        return fd;
    }

private:
    int fd_ = -1;
    uint64_t size_ = 0;
};

// "a FIFO", "a directory", "a character device", ... for an st_mode that is not a
// regular file (the words the error messages use).
std::string_view file_kind_name(unsigned mode);

// Opens `path` read-only if it is a regular file (symlinks are followed; what they point
// to decides). `what` names the file's role in messages ("prompt file", "model file").
Result<RegularFile> open_regular_file(const std::string& path, std::string_view what);

// The whole content of the regular file at `path`; an error when it holds more than
// `max_bytes` (checked against its size before reading and again while reading, in case
// it grows).
Result<std::string> read_regular_file(const std::string& path, uint64_t max_bytes, std::string_view what);

// "1.5 KiB", "16 MiB": a byte count for messages.
std::string byte_size_text(uint64_t n);

}  // namespace tdm
