// SPDX-License-Identifier: Apache-2.0
// host/engine/state_file_format.cpp
#include "engine/state_file_format.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "formats/model_fingerprint.h"

namespace tdm {

namespace {

constexpr uint32_t kFixedBytes = 72;
constexpr uint32_t kMaxString = 4096;
constexpr uint32_t kMaxLayers = 1u << 16;

void put32(std::string& s, uint32_t v) {
    for (int i = 0; i < 4; ++i) s.push_back(char(uint8_t(v >> (8 * i))));
}
void put64(std::string& s, uint64_t v) {
    for (int i = 0; i < 8; ++i) s.push_back(char(uint8_t(v >> (8 * i))));
}
void put_str(std::string& s, const std::string& v) {
    put32(s, uint32_t(v.size()));
    s += v;
}

// Bounds-checked reading of the header bytes.
class Cursor {
public:
    explicit Cursor(const std::string& b) : b_(b) {}
    Result<uint64_t> u(int bytes) {
        if (pos_ + size_t(bytes) > b_.size())
            return Error::format("corrupt header: it ends at byte {} inside a field", b_.size());
        uint64_t v = 0;
        for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | uint8_t(b_[pos_ + size_t(i)]);
        pos_ += size_t(bytes);
        return v;
    }
    Result<std::string> str(const char* what) {
        const uint64_t n = TDM_TRY(u(4));
        if (n > kMaxString) return Error::format("corrupt header: a {} of {} bytes", what, n);
        if (pos_ + n > b_.size()) return Error::format("corrupt header: the {} runs past its end", what);
        std::string s = b_.substr(pos_, size_t(n));
        pos_ += size_t(n);
        return s;
    }
    size_t pos() const { return pos_; }

private:
    const std::string& b_;
    size_t pos_ = 0;
};

Status pread_all(int fd, void* dst, size_t n, uint64_t offset) {
    size_t got = 0;
    while (got < n) {
        const ssize_t r = ::pread(fd, static_cast<char*>(dst) + got, n - got, off_t(offset + got));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return Error::format("read failed: {}", std::strerror(errno));
        if (r == 0) return Error::format("truncated at byte {}", offset + got);
        got += size_t(r);
    }
    return {};
}

// a + b, or an error when it overflows (a hostile header's sizes)
Result<uint64_t> add(uint64_t a, uint64_t b) {
    if (a > UINT64_MAX - b) return Error("corrupt header: sizes overflow");
    return a + b;
}

}  // namespace

uint64_t StateHeader::kv_bytes() const {
    uint64_t b = 0;
    for (const StateLayerShape& l : layers)
        b += uint64_t(l.rows(n_tokens)) * l.n_kv_head * (uint64_t(l.dim_k) + l.dim_v) * kv_element_bytes;
    for (uint64_t s : states) b += s * 4;
    return b;
}

uint64_t StateHeader::section_bytes() const {
    uint64_t b = 0;
    for (const StateSection& s : sections) b += s.bytes;
    return b;
}

std::string encode_state_header(const StateHeader& h) {
    std::string s(kStateMagic, sizeof kStateMagic);
    put32(s, h.version);
    put32(s, 0);  // header_bytes, patched below
    put64(s, h.fingerprint);
    put32(s, h.kv_element_bytes);
    put32(s, h.n_tokens);
    put32(s, uint32_t(h.layers.size()));
    put32(s, uint32_t(h.states.size()));
    put32(s, uint32_t(h.sections.size()));
    put32(s, 0);
    put64(s, h.extra_bytes);
    put64(s, h.payload_bytes);
    put64(s, h.raw_bytes);
    put_str(s, h.model);
    for (const StateLayerShape& l : h.layers) {
        put32(s, l.n_kv_head);
        put32(s, l.dim_k);
        put32(s, l.dim_v);
        if (h.version >= 2) put32(s, l.window);
    }
    for (uint64_t n : h.states) put64(s, n);
    for (const StateSection& sec : h.sections) {
        put_str(s, sec.name);
        put64(s, sec.bytes);
    }
    const uint32_t total = uint32_t(s.size() + 8);
    for (int i = 0; i < 4; ++i) s[12 + size_t(i)] = char(uint8_t(total >> (8 * i)));
    put64(s, fnv1a64(s));
    return s;
}

Result<StateHeader> read_state_header(int fd, uint64_t file_bytes) {
    if (file_bytes < 16)
        return Error::format("truncated at byte {} of at least {} (not even a header)", file_bytes, kFixedBytes + 16);
    std::string b(16, '\0');
    TDM_TRY(pread_all(fd, b.data(), 16, 0));
    if (std::memcmp(b.data(), kStateMagic, sizeof kStateMagic) != 0)
        return Error("not a tandem state file (bad magic; it should start with \"TDMSTATE\")");
    StateHeader h;
    Cursor c0(b);
    (void)TDM_TRY(c0.u(8));
    h.version = uint32_t(TDM_TRY(c0.u(4)));
    if (h.version > kStateFormatVersion)
        return Error::format("made by a newer tandem: format version {}, this one reads {}", h.version,
                             kStateFormatVersion);
    if (h.version == 0) return Error("corrupt header: format version 0");
    const uint32_t header_bytes = uint32_t(TDM_TRY(c0.u(4)));
    if (header_bytes < kFixedBytes + 12 || header_bytes > kStateMaxHeaderBytes)
        return Error::format("corrupt header: a header of {} bytes", header_bytes);
    if (header_bytes > file_bytes) return Error::format("truncated at byte {} of {} (inside the header)", file_bytes,
                                                        header_bytes);
    b.resize(header_bytes);
    TDM_TRY(pread_all(fd, b.data() + 16, header_bytes - 16, 16));
    const std::string body = b.substr(0, header_bytes - 8);
    uint64_t stored = 0;
    for (int i = 7; i >= 0; --i) stored = (stored << 8) | uint8_t(b[header_bytes - 8 + size_t(i)]);
    if (stored != fnv1a64(body)) return Error("corrupt header: its checksum does not match");

    Cursor c(body);
    (void)TDM_TRY(c.u(8));
    (void)TDM_TRY(c.u(4));
    (void)TDM_TRY(c.u(4));
    h.fingerprint = TDM_TRY(c.u(8));
    h.kv_element_bytes = uint32_t(TDM_TRY(c.u(4)));
    h.n_tokens = uint32_t(TDM_TRY(c.u(4)));
    const uint64_t n_layers = TDM_TRY(c.u(4)), n_states = TDM_TRY(c.u(4)), n_sections = TDM_TRY(c.u(4));
    (void)TDM_TRY(c.u(4));
    h.extra_bytes = TDM_TRY(c.u(8));
    h.payload_bytes = TDM_TRY(c.u(8));
    h.raw_bytes = TDM_TRY(c.u(8));
    if (h.kv_element_bytes != 2 && h.kv_element_bytes != 4)
        return Error::format("corrupt header: KV elements of {} bytes", h.kv_element_bytes);
    if (n_layers > kMaxLayers || n_states > kMaxLayers || n_sections > kStateMaxSections)
        return Error::format("corrupt header: {} layers, {} recurrent states, {} drafter sections", n_layers, n_states,
                             n_sections);
    h.model = TDM_TRY(c.str("model name"));
    for (uint64_t i = 0; i < n_layers; ++i) {
        StateLayerShape l;
        l.n_kv_head = uint32_t(TDM_TRY(c.u(4)));
        l.dim_k = uint32_t(TDM_TRY(c.u(4)));
        l.dim_v = uint32_t(TDM_TRY(c.u(4)));
        if (h.version >= 2) l.window = uint32_t(TDM_TRY(c.u(4)));
        h.layers.push_back(l);
    }
    for (uint64_t i = 0; i < n_states; ++i) {
        const uint64_t n = TDM_TRY(c.u(8));
        if (n > (1ull << 40)) return Error::format("corrupt header: recurrent state {} of {} floats", i, n);
        h.states.push_back(n);
    }
    for (uint64_t i = 0; i < n_sections; ++i) {
        StateSection s;
        s.name = TDM_TRY(c.str("drafter name"));
        s.bytes = TDM_TRY(c.u(8));
        h.sections.push_back(std::move(s));
    }
    if (c.pos() != body.size()) return Error::format("corrupt header: {} unread bytes", body.size() - c.pos());
    if (h.extra_bytes > kStateMaxExtraBytes)
        return Error::format("corrupt header: an extra string of {} bytes", h.extra_bytes);
    // the sums, overflow-checked: raw_bytes must be exactly what the fields describe
    uint64_t raw = uint64_t(h.n_tokens) * 4;
    for (const StateLayerShape& l : h.layers) {
        const uint64_t row = uint64_t(l.n_kv_head) * (uint64_t(l.dim_k) + l.dim_v) * h.kv_element_bytes;
        if (row > (1ull << 32)) return Error::format("corrupt header: KV rows of {} bytes", row);
        raw = TDM_TRY(add(raw, row * l.rows(h.n_tokens)));
    }
    for (uint64_t s : h.states) raw = TDM_TRY(add(raw, s * 4));
    for (const StateSection& s : h.sections) raw = TDM_TRY(add(raw, s.bytes));
    raw = TDM_TRY(add(raw, h.extra_bytes));
    if (raw != h.raw_bytes)
        return Error::format("corrupt header: its payload should hold {} bytes, it says {}", raw, h.raw_bytes);
    const uint64_t end = TDM_TRY(add(header_bytes, h.payload_bytes));
    if (file_bytes < end) return Error::format("truncated at byte {} of {}", file_bytes, end);
    if (file_bytes > end) return Error::format("corrupt: {} bytes follow the payload", file_bytes - end);
    return h;
}

}  // namespace tdm
