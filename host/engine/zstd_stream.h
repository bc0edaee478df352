/* SPDX-License-Identifier: Apache-2.0 */
// host/engine/zstd_stream.h: one zstd frame streamed into or out of a file, with
// zstd's content checksum, so that a flipped bit anywhere in it is detected.
// Sequence-state files use it for their payload (state_file.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "common/error.h"

namespace tdm {

class ZstdFileWriter {
public:
    // Appends a frame to `f` (open for writing) at compression `level`.
    static Result<std::unique_ptr<ZstdFileWriter>> create(std::FILE* f, int level);
    ~ZstdFileWriter();
    ZstdFileWriter(const ZstdFileWriter&) = delete;
    ZstdFileWriter& operator=(const ZstdFileWriter&) = delete;

    Status write(const void* data, uint64_t n);
    Status finish();  // ends the frame (checksum included)
    uint64_t compressed_bytes() const { return written_; }
    uint64_t raw_bytes() const { return raw_; }

private:
    ZstdFileWriter() = default;
    Status flush_out();
    std::FILE* f_ = nullptr;
    void* cctx_ = nullptr;
    std::string out_;
    uint64_t written_ = 0, raw_ = 0;
};

class ZstdFileReader {
public:
    // Reads one frame of exactly `compressed` bytes starting at `offset` of `fd`.
    static Result<std::unique_ptr<ZstdFileReader>> create(int fd, uint64_t offset, uint64_t compressed);
    ~ZstdFileReader();
    ZstdFileReader(const ZstdFileReader&) = delete;
    ZstdFileReader& operator=(const ZstdFileReader&) = delete;

    // Exactly n bytes of content, or an error: "corrupt: zstd checksum mismatch",
    // "corrupt: the payload ends after N bytes", "corrupt: zstd: <reason>".
    Status read(void* dst, uint64_t n);
    // The frame must end here: its checksum is verified, and no bytes may follow.
    Status finish();
    uint64_t raw_read() const { return raw_; }

private:
    ZstdFileReader() = default;
    Status fill();
    Status decode(void* dst, uint64_t n, uint64_t& produced, size_t& hint);
    int fd_ = -1;
    void* dctx_ = nullptr;
    uint64_t next_ = 0, left_ = 0;  // file offset and bytes of the frame not read yet
    std::string in_;
    size_t in_pos_ = 0;
    uint64_t raw_ = 0;
    bool frame_done_ = false;
};

}  // namespace tdm
