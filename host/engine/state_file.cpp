// SPDX-License-Identifier: Apache-2.0
// host/engine/state_file.cpp
#include "engine/state_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "engine/state_file_format.h"
#include "engine/zstd_stream.h"
#include "formats/model_fingerprint.h"

namespace tdm {

namespace {

// Drafter sections and the extra string are read as they arrive, never sized
// by the header's claim alone; this bounds what a small hostile file can make
// the reader allocate (real sections, float rows, never compress this much).
constexpr uint64_t kMaxTailRatio = 256;
constexpr uint64_t kTailSlack = 16ull << 20;

const char* file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISSOCK(m)) return "a socket";
    return "not a regular file";
}

// Removes the temporary file unless the write completed.
struct TempFile {
    std::string path;
    std::FILE* f = nullptr;
    bool keep = false;
    ~TempFile() {
        if (f) std::fclose(f);
        if (!keep && !path.empty()) ::unlink(path.c_str());
    }
};

// The umask without changing it (umask() would, for every thread).
mode_t process_umask() {
    std::FILE* f = std::fopen("/proc/self/status", "r");
    mode_t mask = 022;
    if (!f) return mask;
    char line[256];
    while (std::fgets(line, sizeof line, f))
        if (std::strncmp(line, "Umask:", 6) == 0) mask = mode_t(std::strtoul(line + 6, nullptr, 8));
    std::fclose(f);
    return mask;
}

Status write_all(std::FILE* f, const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f) != n) return Error::format("write failed: {}", std::strerror(errno));
    return {};
}

class Fd {
public:
    explicit Fd(int fd) : fd_(fd) {}
    ~Fd() {
        if (fd_ >= 0) ::close(fd_);
    }
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    int get() const { return fd_; }

private:
    int fd_;
};

// Reads n bytes into a string that grows with what arrives.
Status read_growing(ZstdFileReader& r, uint64_t n, std::string& out) {
    out.clear();
    while (out.size() < n) {
        const size_t piece = size_t(std::min<uint64_t>(n - out.size(), 1u << 20));
        const size_t at = out.size();
        out.resize(at + piece);
        TDM_TRY(r.read(out.data() + at, piece));
    }
    return {};
}

Result<LoadedState> load_checked(const std::string& path, const Model& model, KvPool& kv, int seq,
                                 std::span<Drafter* const> drafters, bool& touched) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return Error::format("cannot open: {}", std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return Error::format("{}, not a state file", file_kind(st.st_mode));
    // O_NONBLOCK: a FIFO swapped in after the stat() must not block the open
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (fd.get() < 0) return Error::format("cannot open: {}", std::strerror(errno));
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return Error("not a regular file");
    const uint64_t file_bytes = uint64_t(st.st_size);
    const StateHeader h = TDM_TRY(read_state_header(fd.get(), file_bytes));

    const uint64_t fp = model_fingerprint(model.source());
    if (h.fingerprint != fp)
        return Error::format("made for model {} (fingerprint {}), this is {} (fingerprint {})", h.model,
                             fingerprint_hex(h.fingerprint), model_label(model), fingerprint_hex(fp));
    const uint32_t es = kv.config().f16 ? 2 : 4;
    if (h.kv_element_bytes != es)
        return Error::format("KV type {}, this run uses {} (--kv-type)", h.kv_element_bytes == 2 ? "f16" : "f32",
                             es == 2 ? "f16" : "f32");
    if (h.layers.size() != kv.n_layers() || h.states.size() != kv.n_states())
        return Error::format("{} attention layers and {} recurrent states, this model has {} and {}", h.layers.size(),
                             h.states.size(), kv.n_layers(), kv.n_states());
    for (uint32_t i = 0; i < kv.n_layers(); ++i) {
        const KvLayerBinding* l = kv.layer(i);
        const StateLayerShape want{l->n_kv_head, l->dk, l->dv, l->window};
        if (h.version < 2 && l->window)
            return Error::format("saved by an older tandem (state format {}), which kept every position of "
                                 "sliding-window layers; this one keeps only their window: save the state again",
                                 h.version);
        if (h.layers[i].window != want.window)
            return Error::format("attention layer {} has a sliding window of {}, this model's has {}", i,
                                 h.layers[i].window, want.window);
        if (!(h.layers[i] == want))
            return Error::format("attention layer {} has {} KV heads of dims {}/{}, this model's has {} of {}/{}", i,
                                 h.layers[i].n_kv_head, h.layers[i].dim_k, h.layers[i].dim_v, want.n_kv_head,
                                 want.dim_k, want.dim_v);
    }
    for (uint32_t i = 0; i < kv.n_states(); ++i)
        if (h.states[i] != kv.state(i)->n_f32)
            return Error::format("recurrent state {} has {} floats, this model's has {}", i, h.states[i],
                                 kv.state(i)->n_f32);
    if (h.n_tokens == 0) return Error("holds no tokens");
    if (h.n_tokens > kv.capacity_tokens())
        return Error::format("holds {} tokens, more than this run's context of {} (-c/--ctx-size)", h.n_tokens,
                             kv.capacity_tokens());
    // which section each drafter gets (by name, in order); one that needs its
    // own state and finds none refuses the file before anything is touched
    std::vector<int> section_of(drafters.size(), -1);
    std::vector<bool> taken(h.sections.size(), false);
    for (size_t d = 0; d < drafters.size(); ++d) {
        for (size_t s = 0; s < h.sections.size() && section_of[d] < 0; ++s)
            if (!taken[s] && h.sections[s].name == drafters[d]->name()) {
                section_of[d] = int(s);
                taken[s] = true;
            }
        if (section_of[d] < 0 && drafters[d]->needs_saved_state())
            return Error::format("saved without the {} drafter's state; run without --prompt-cache or with the same "
                                 "drafters as when it was saved",
                                 drafters[d]->name());
    }
    if (h.section_bytes() + h.extra_bytes > kTailSlack + kMaxTailRatio * h.payload_bytes)
        return Error::format("corrupt header: {} bytes of drafter state and extra string in a payload of {} bytes",
                             h.section_bytes() + h.extra_bytes, h.payload_bytes);

    auto reader = TDM_TRY(ZstdFileReader::create(fd.get(), file_bytes - h.payload_bytes, h.payload_bytes));
    LoadedState out;
    out.file_bytes = file_bytes;
    out.tokens.resize(h.n_tokens);
    TDM_TRY(reader->read(out.tokens.data(), uint64_t(h.n_tokens) * 4));
    touched = true;
    TDM_TRY(kv.import_sequence(seq, h.n_tokens, [&](uint8_t* dst, uint64_t n) { return reader->read(dst, n); }));
    std::vector<std::string> sections(h.sections.size());
    for (size_t s = 0; s < h.sections.size(); ++s) TDM_TRY(read_growing(*reader, h.sections[s].bytes, sections[s]));
    TDM_TRY(read_growing(*reader, h.extra_bytes, out.extra));
    TDM_TRY(reader->finish());
    const uint32_t n_vocab = model.info().n_vocab;
    for (size_t i = 0; i < out.tokens.size(); ++i)
        if (out.tokens[i] < 0 || uint32_t(out.tokens[i]) >= n_vocab)
            return Error::format("corrupt: token {} at position {} is outside the vocabulary of {}", out.tokens[i], i,
                                 n_vocab);
    for (size_t d = 0; d < drafters.size(); ++d)
        if (section_of[d] >= 0)
            TDM_TRY_CTX(drafters[d]->load_state(out.tokens, sections[size_t(section_of[d])]),
                        fmt::format("the {} drafter's section", drafters[d]->name()));
    return out;
}

}  // namespace

std::string model_label(const Model& model) {
    const std::string arch = model.source().architecture();
    const std::string file = std::filesystem::path(model.source().path()).filename().string();
    return arch.empty() ? file : arch + " " + file;
}

Result<SavedStateInfo> save_sequence_state(const std::string& path, const Model& model, const KvPool& kv, int seq,
                                           std::span<const int32_t> tokens, std::span<Drafter* const> drafters,
                                           std::string_view extra, int zstd_level) {
    auto fail = [&path](const Error& e) { return Error::format("saving {}: {}", path, e.message()); };
    if (tokens.empty()) return fail(Error("no tokens to save"));
    if (extra.size() > kStateMaxExtraBytes)
        return fail(Error::format("an extra string of {} bytes (at most {})", extra.size(), kStateMaxExtraBytes));
    StateHeader h;
    h.fingerprint = model_fingerprint(model.source());
    h.model = model_label(model);
    h.kv_element_bytes = kv.config().f16 ? 2 : 4;
    h.n_tokens = uint32_t(tokens.size());
    for (uint32_t i = 0; i < kv.n_layers(); ++i) h.layers.push_back({kv.layer(i)->n_kv_head, kv.layer(i)->dk, kv.layer(i)->dv, kv.layer(i)->window});
    for (uint32_t i = 0; i < kv.n_states(); ++i) h.states.push_back(kv.state(i)->n_f32);
    std::vector<std::string> sections;
    for (Drafter* d : drafters) {
        auto bytes = d->save_state(h.n_tokens);
        if (!bytes.ok()) return fail(bytes.error().context(fmt::format("the {} drafter", d->name())));
        if (bytes->empty()) continue;
        if (h.sections.size() == kStateMaxSections) return fail(Error("too many drafters with state"));
        h.sections.push_back({d->name(), bytes->size()});
        sections.push_back(std::move(bytes).value());
    }
    h.extra_bytes = extra.size();
    h.raw_bytes = h.expected_raw_bytes();

    TempFile tmp;
    const std::filesystem::path target(path);
    std::string pattern = (target.parent_path().empty() ? std::string(".") : target.parent_path().string()) + "/." +
                          target.filename().string() + ".XXXXXX";
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0) return fail(Error::format("cannot create a temporary file {}: {}", pattern, std::strerror(errno)));
    tmp.path = pattern;
    (void)::fchmod(fd, 0666 & ~process_umask());  // mkstemp makes 0600; a cache is an ordinary file
    tmp.f = ::fdopen(fd, "wb");
    if (!tmp.f) {
        ::close(fd);
        return fail(Error::format("cannot write {}: {}", pattern, std::strerror(errno)));
    }
    // the header's size does not depend on the payload size: write it now, patch it at the end
    std::string header = encode_state_header(h);
    if (auto st = write_all(tmp.f, header.data(), header.size()); !st.ok()) return fail(st.error());
    auto zw = ZstdFileWriter::create(tmp.f, zstd_level);
    if (!zw.ok()) return fail(zw.error());
    ZstdFileWriter& w = **zw;
    Status st = w.write(tokens.data(), tokens.size_bytes());
    if (st.ok()) st = kv.export_sequence(seq, h.n_tokens, [&w](const uint8_t* p, uint64_t n) { return w.write(p, n); });
    for (size_t s = 0; st.ok() && s < sections.size(); ++s) st = w.write(sections[s].data(), sections[s].size());
    if (st.ok()) st = w.write(extra.data(), extra.size());
    if (st.ok()) st = w.finish();
    if (!st.ok()) return fail(st.error());
    if (w.raw_bytes() != h.raw_bytes)
        return fail(Error::format("wrote {} payload bytes, {} expected", w.raw_bytes(), h.raw_bytes));
    h.payload_bytes = w.compressed_bytes();
    header = encode_state_header(h);
    if (std::fseek(tmp.f, 0, SEEK_SET) != 0) return fail(Error::format("seek failed: {}", std::strerror(errno)));
    if (auto s2 = write_all(tmp.f, header.data(), header.size()); !s2.ok()) return fail(s2.error());
    if (std::fflush(tmp.f) != 0 || ::fsync(::fileno(tmp.f)) != 0)
        return fail(Error::format("write failed: {}", std::strerror(errno)));
    const int rc = std::fclose(tmp.f);
    tmp.f = nullptr;
    if (rc != 0) return fail(Error::format("write failed: {}", std::strerror(errno)));
    if (::rename(tmp.path.c_str(), path.c_str()) != 0)
        return fail(Error::format("cannot rename {} to it: {}", tmp.path, std::strerror(errno)));
    tmp.keep = true;
    SavedStateInfo info;
    info.file_bytes = header.size() + h.payload_bytes;
    info.kv_bytes = h.kv_bytes();
    return info;
}

Result<LoadedState> load_sequence_state(const std::string& path, const Model& model, KvPool& kv, int seq,
                                        std::span<Drafter* const> drafters) {
    bool touched = false;
    auto r = load_checked(path, model, kv, seq, drafters, touched);
    if (!r.ok()) {
        if (touched) (void)kv.truncate(seq, 0);
        return Error::format("{}: {}", path, r.error().message());
    }
    return r;
}

}  // namespace tdm
