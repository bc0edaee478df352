/* SPDX-License-Identifier: Apache-2.0 */
// host/formats/mapped_file.h: a whole file mapped read-only into memory, the storage
// under every model reader (GGUF, safetensors). Tensor data is used in place; after a
// tensor has been copied to device memory the loader calls release_pages() so that
// the file's pages do not stay in our resident set for the life of the process.
// Not here: parsing of any format; writing files.
#pragma once

#include "common/error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace tdm {

class MappedFile {
public:
    // Maps `path` (a regular file) read-only. An empty file maps to size() == 0. Anything
    // but a regular file (a FIFO, a device, a directory) is refused before any read, and
    // the open never blocks (common/file_read.h). `what` names the file in messages.
    static Result<std::unique_ptr<MappedFile>> open(const std::string& path, std::string_view what = "model file");

    // Wraps bytes already in memory (tests, fuzzing); `name` stands in for the path
    // in error messages. release_pages() does nothing on such a buffer.
    static std::unique_ptr<MappedFile> from_bytes(std::string name, std::string bytes);

    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    uint64_t size() const { return size_; }
    const std::string& path() const { return path_; }
    bool is_mapped() const { return mapped_; }

    // Drops the pages that lie entirely inside [offset, offset + length) from this
    // process's resident set (madvise MADV_DONTNEED). Partial pages at either end are
    // kept because neighbouring tensors may share them. The bytes stay readable: a
    // later access faults them back in from the file. Ranges past the end are clipped.
    void release_pages(uint64_t offset, uint64_t length) const;

private:
    MappedFile() = default;

    std::string path_;
    const uint8_t* data_ = nullptr;
    uint64_t size_ = 0;
    bool mapped_ = false;
    std::string owned_;  // backing store for from_bytes()
};

}  // namespace tdm
