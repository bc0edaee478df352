// SPDX-License-Identifier: Apache-2.0
// host/engine/zstd_stream.cpp
#include "engine/zstd_stream.h"

#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tdm {

namespace {
ZSTD_CCtx* cctx(void* p) { return static_cast<ZSTD_CCtx*>(p); }
ZSTD_DCtx* dctx(void* p) { return static_cast<ZSTD_DCtx*>(p); }

Error zstd_error(size_t code) {
    if (ZSTD_getErrorCode(code) == ZSTD_error_checksum_wrong) return Error("corrupt: zstd checksum mismatch");
    return Error::format("corrupt: zstd: {}", ZSTD_getErrorName(code));
}
}  // namespace

Result<std::unique_ptr<ZstdFileWriter>> ZstdFileWriter::create(std::FILE* f, int level) {
    std::unique_ptr<ZstdFileWriter> w(new ZstdFileWriter());
    w->f_ = f;
    w->cctx_ = ZSTD_createCCtx();
    if (!w->cctx_) return Error("zstd: out of memory");
    if (ZSTD_isError(ZSTD_CCtx_setParameter(cctx(w->cctx_), ZSTD_c_compressionLevel, level)) ||
        ZSTD_isError(ZSTD_CCtx_setParameter(cctx(w->cctx_), ZSTD_c_checksumFlag, 1)))
        return Error("zstd: cannot set the compression parameters");
    w->out_.resize(ZSTD_CStreamOutSize());
    return w;
}

ZstdFileWriter::~ZstdFileWriter() { ZSTD_freeCCtx(cctx(cctx_)); }

Status ZstdFileWriter::write(const void* data, uint64_t n) {
    ZSTD_inBuffer in{data, size_t(n), 0};
    raw_ += n;
    while (in.pos < in.size) {
        ZSTD_outBuffer out{out_.data(), out_.size(), 0};
        const size_t r = ZSTD_compressStream2(cctx(cctx_), &out, &in, ZSTD_e_continue);
        if (ZSTD_isError(r)) return Error::format("zstd: {}", ZSTD_getErrorName(r));
        if (out.pos && std::fwrite(out_.data(), 1, out.pos, f_) != out.pos)
            return Error::format("write failed: {}", std::strerror(errno));
        written_ += out.pos;
    }
    return {};
}

Status ZstdFileWriter::finish() {
    ZSTD_inBuffer in{nullptr, 0, 0};
    size_t left = 1;
    while (left) {
        ZSTD_outBuffer out{out_.data(), out_.size(), 0};
        left = ZSTD_compressStream2(cctx(cctx_), &out, &in, ZSTD_e_end);
        if (ZSTD_isError(left)) return Error::format("zstd: {}", ZSTD_getErrorName(left));
        if (out.pos && std::fwrite(out_.data(), 1, out.pos, f_) != out.pos)
            return Error::format("write failed: {}", std::strerror(errno));
        written_ += out.pos;
    }
    return {};
}

Result<std::unique_ptr<ZstdFileReader>> ZstdFileReader::create(int fd, uint64_t offset, uint64_t compressed) {
    std::unique_ptr<ZstdFileReader> r(new ZstdFileReader());
    r->fd_ = fd;
    r->next_ = offset;
    r->left_ = compressed;
    r->dctx_ = ZSTD_createDCtx();
    if (!r->dctx_) return Error("zstd: out of memory");
    return r;
}

ZstdFileReader::~ZstdFileReader() { ZSTD_freeDCtx(dctx(dctx_)); }

Status ZstdFileReader::fill() {
    const size_t want = size_t(std::min<uint64_t>(left_, ZSTD_DStreamInSize()));
    in_.resize(want);
    size_t got = 0;
    while (got < want) {
        const ssize_t r = ::pread(fd_, in_.data() + got, want - got, off_t(next_ + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return Error::format("read failed: {}", std::strerror(errno));
        if (r == 0) return Error::format("truncated at byte {}", next_ + got);
        got += size_t(r);
    }
    next_ += want;
    left_ -= want;
    in_pos_ = 0;
    return {};
}

Status ZstdFileReader::read(void* dst, uint64_t n) {
    auto* p = static_cast<uint8_t*>(dst);
    uint64_t done = 0;
    while (done < n) {
        if (frame_done_) return Error::format("corrupt: the payload ends after {} bytes", raw_);
        if (in_pos_ == in_.size()) {
            if (left_ == 0) return Error::format("corrupt: the payload ends after {} bytes", raw_);
            TDM_TRY(fill());
        }
        ZSTD_inBuffer in{in_.data(), in_.size(), in_pos_};
        ZSTD_outBuffer out{p + done, size_t(std::min<uint64_t>(n - done, 1ull << 30)), 0};
        const size_t r = ZSTD_decompressStream(dctx(dctx_), &out, &in);
        if (ZSTD_isError(r)) return zstd_error(r);
        in_pos_ = in.pos;
        done += out.pos;
        raw_ += out.pos;
        if (r == 0) frame_done_ = true;
    }
    return {};
}

Status ZstdFileReader::finish() {
    // the checksum comes after the last content byte: drive the decoder to the
    // frame's end, which must produce nothing more
    uint8_t extra = 0;
    while (!frame_done_) {
        if (in_pos_ == in_.size()) {
            if (left_ == 0) return Error::format("corrupt: the payload's zstd frame is cut short");
            TDM_TRY(fill());
        }
        ZSTD_inBuffer in{in_.data(), in_.size(), in_pos_};
        ZSTD_outBuffer out{&extra, 1, 0};
        const size_t r = ZSTD_decompressStream(dctx(dctx_), &out, &in);
        if (ZSTD_isError(r)) return zstd_error(r);
        in_pos_ = in.pos;
        if (out.pos) return Error::format("corrupt: the payload holds more than the {} bytes its header says", raw_);
        if (r == 0) frame_done_ = true;
    }
    if (in_pos_ != in_.size() || left_ != 0) return Error("corrupt: bytes follow the payload's zstd frame");
    return {};
}

}  // namespace tdm
