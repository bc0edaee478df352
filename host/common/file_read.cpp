// SPDX-License-Identifier: Apache-2.0
// host/common/file_read.cpp: POSIX open/fstat/read behind read_regular_file.
#include "common/file_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tdm {

RegularFile::~RegularFile() {
    if (fd_ >= 0) ::close(fd_);
}

RegularFile& RegularFile::operator=(RegularFile&& o) noexcept {
    if (this != &o) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = o.fd_;
        size_ = o.size_;
        o.fd_ = -1;
    }
    return *this;
}

std::string_view file_kind_name(unsigned mode) {
    switch (mode & S_IFMT) {
        case S_IFREG: return "a regular file";
        case S_IFDIR: return "a directory";
        case S_IFIFO: return "a FIFO";
        case S_IFCHR: return "a character device";
        case S_IFBLK: return "a block device";
        case S_IFSOCK: return "a socket";
        case S_IFLNK: return "a symbolic link";
        default: return "not a file";
    }
}

std::string byte_size_text(uint64_t n) {
    constexpr const char* kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    double v = double(n);
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    if (u == 0) return fmt::format("{} bytes", n);
    return v == double(uint64_t(v)) ? fmt::format("{} {}", uint64_t(v), kUnits[u]) : fmt::format("{:.1f} {}", v, kUnits[u]);
}

Result<RegularFile> open_regular_file(const std::string& path, std::string_view what) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
    // It changes nothing for a regular file, the only kind we go on to read.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) return Error::format("cannot open {} {}: {}", what, path, std::strerror(errno));
    RegularFile file(fd, 0);
    struct stat st {};
    if (::fstat(fd, &st) != 0) return Error::format("cannot stat {} {}: {}", what, path, std::strerror(errno));
    if (!S_ISREG(st.st_mode))
        return Error::format("{} {} is {}, not a regular file", what, path, file_kind_name(unsigned(st.st_mode)));
    // Back to blocking reads: a regular file never blocks, and plain read() semantics are
    // what the callers (read loops, mmap) expect.
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    return RegularFile(file.release(), uint64_t(st.st_size));
}

Result<std::string> read_regular_file(const std::string& path, uint64_t max_bytes, std::string_view what) {
    RegularFile file = TDM_TRY(open_regular_file(path, what));
    auto too_big = [&](uint64_t n) {
        return Error::format("{} {} is {}, more than the {} a {} may hold", what, path, byte_size_text(n),
                             byte_size_text(max_bytes), what);
    };
    if (file.size() > max_bytes) return too_big(file.size());
    std::string out;
    out.reserve(size_t(file.size()));
    char buf[1 << 16];
    for (;;) {
        const ssize_t got = ::read(file.fd(), buf, sizeof buf);
        if (got < 0) {
            if (errno == EINTR) continue;
            return Error::format("cannot read {} {}: {}", what, path, std::strerror(errno));
        }
        if (got == 0) break;
        // A file that grows while we read it is held to the same limit.
        if (out.size() + uint64_t(got) > max_bytes) return too_big(out.size() + uint64_t(got));
        out.append(buf, size_t(got));
    }
    return out;
}

}  // namespace tdm
