// SPDX-License-Identifier: Apache-2.0
// host/formats/mapped_file.cpp: POSIX mmap/madvise behind MappedFile.
#include "formats/mapped_file.h"

#include "common/file_read.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tdm {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path, std::string_view what) {
    RegularFile file = TDM_TRY(open_regular_file(path, what));
    std::unique_ptr<MappedFile> f(new MappedFile());
    f->path_ = path;
    f->size_ = file.size();
    if (f->size_ > 0) {
        // MAP_PRIVATE + PROT_READ: we never write, and a private mapping keeps other
        // processes' writes to the file from being our problem beyond what they change.
        void* p = ::mmap(nullptr, size_t(f->size_), PROT_READ, MAP_PRIVATE, file.fd(), 0);
        if (p == MAP_FAILED)
            return Error::format("{}: cannot map {} bytes: {}", path, f->size_, std::strerror(errno));
        f->data_ = static_cast<const uint8_t*>(p);
        f->mapped_ = true;
    }
    return f;  // the mapping keeps its own reference to the file; `file` closes the descriptor
}

std::unique_ptr<MappedFile> MappedFile::from_bytes(std::string name, std::string bytes) {
    std::unique_ptr<MappedFile> f(new MappedFile());
    f->path_ = std::move(name);
    f->owned_ = std::move(bytes);
    f->data_ = reinterpret_cast<const uint8_t*>(f->owned_.data());
    f->size_ = f->owned_.size();
    return f;
}

MappedFile::~MappedFile() {
    if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_t(size_));
}

void MappedFile::release_pages(uint64_t offset, uint64_t length) const {
    if (!mapped_ || offset >= size_) return;
    if (length > size_ - offset) length = size_ - offset;
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    // The mapping starts on a page boundary, so offsets within it align the same way.
    uint64_t begin = (offset + page - 1) / page * page;
    uint64_t end = (offset + length) / page * page;
    // The page holding the end of the file is shared with nothing after it.
    if (offset + length == size_) end = (size_ + page - 1) / page * page;
    if (end <= begin) return;
    // Failure only means the pages stay resident; nothing to report to the caller.
    ::madvise(const_cast<uint8_t*>(data_) + begin, size_t(end - begin), MADV_DONTNEED);
}

}  // namespace tdm
