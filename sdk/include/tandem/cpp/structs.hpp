// SPDX-License-Identifier: MIT
// tandem/cpp/structs.hpp: reading and writing the size-prefixed structs that
// cross the ABI by the rules of tandem.h section 1: a reader copies
// min(struct_size, its sizeof) bytes into a zeroed local, so fields the writer
// did not know read as zero; a writer into the host's struct writes only the
// bytes the host's struct_size covers.
//
// Header-only, C++17, no allocation, no exceptions.
#ifndef TANDEM_CPP_STRUCTS_HPP
#define TANDEM_CPP_STRUCTS_HPP

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../tandem.h"

namespace tdm::sdk {

// Copies the struct at `in` (its struct_size first) into *out: min(struct_size,
// sizeof(T)) bytes, the rest zero; out->struct_size becomes the number of bytes
// copied, so TDM_HAS_MEMBER(out, T, member) stays true exactly for the fields
// that came from `in`. Returns false (and zeroes *out) when `in` is null or its
// struct_size is below `min_size` (the size the negotiated version guarantees,
// a TDM_V1_SIZEOF_* constant). Reads no byte of `in` past its struct_size.
template <class T>
bool read_struct(const T* in, std::uint32_t min_size, T* out) noexcept {
    static_assert(std::is_trivially_copyable<T>::value, "read_struct: T must be a C struct");
    std::memset(static_cast<void*>(out), 0, sizeof(T));
    if (!in) return false;
    std::uint32_t size = 0;
    std::memcpy(&size, in, sizeof size);  // struct_size is the first member of every ABI struct
    if (size < min_size || size < sizeof(std::uint32_t)) return false;
    const std::size_t n = size < sizeof(T) ? size : sizeof(T);
    std::memcpy(static_cast<void*>(out), in, n);
    out->struct_size = std::uint32_t(n);
    return true;
}

// Writes `value` into a struct the host passed to be filled (tdm_model_info,
// tdm_draft_head_info, tdm_host_limits...): the bytes after struct_size up to
// min(host's struct_size, sizeof(T)); host->struct_size is left alone. A host
// older than this header gets only the fields it knows.
template <class T>
void write_struct(T* host, const T& value) noexcept {
    static_assert(std::is_trivially_copyable<T>::value, "write_struct: T must be a C struct");
    if (!host) return;
    const std::size_t first = offsetof(T, struct_size) + sizeof(std::uint32_t);
    const std::size_t size = host->struct_size < sizeof(T) ? host->struct_size : sizeof(T);
    if (size <= first) return;
    std::memcpy(reinterpret_cast<unsigned char*>(host) + first, reinterpret_cast<const unsigned char*>(&value) + first,
                size - first);
}

}  // namespace tdm::sdk

#endif  // TANDEM_CPP_STRUCTS_HPP
