// SPDX-License-Identifier: Apache-2.0
// host/formats/model_source.cpp: format detection and the unified tensor list.
#include "formats/model_source.h"

#include "common/dtype.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>

namespace tdm {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kAccepted =
    "tandem accepts a GGUF file (v2/v3), a .safetensors file, or a Hugging Face model directory "
    "(config.json with model.safetensors or model.safetensors.index.json)";

bool has_gguf_magic(const MappedFile& f) {
    return f.size() >= 4 && std::memcmp(f.data(), "GGUF", 4) == 0;
}

bool ends_with(std::string_view s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

std::string_view source_format_name(SourceFormat f) {
    return f == SourceFormat::gguf ? "gguf" : "safetensors";
}

Result<std::unique_ptr<ModelSource>> ModelSource::open(const std::string& path) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return Error::format("{}: no such file or directory", path);

    std::unique_ptr<ModelSource> m(new ModelSource());
    m->path_ = path;
    if (fs::is_directory(st)) {
        if (!fs::exists(fs::path(path) / "model.safetensors", ec) &&
            !fs::exists(fs::path(path) / "model.safetensors.index.json", ec))
            return Error::format(
                "{}: directory has no model.safetensors or model.safetensors.index.json; {}", path,
                kAccepted);
        m->st_ = TDM_TRY(SafetensorsModel::open(path));
    } else {
        std::unique_ptr<MappedFile> file = TDM_TRY(MappedFile::open(path));
        if (has_gguf_magic(*file)) {
            m->gguf_ = TDM_TRY(GgufFile::from_mapping(std::move(file)));
        } else if (looks_like_safetensors(*file) || ends_with(path, ".safetensors")) {
            // A file named .safetensors whose header is broken gets the parser's error.
            m->st_ = TDM_TRY(SafetensorsModel::from_mapping(std::move(file)));
        } else {
            std::string first;
            for (uint64_t i = 0; i < file->size() && i < 8; ++i)
                first += fmt::format("{}{:02x}", i ? " " : "", file->data()[i]);
            return Error::format(
                "{}: not a model file: no GGUF magic and no safetensors header (first bytes [{}]); {}",
                path, first, kAccepted);
        }
    }

    if (m->gguf_) {
        m->format_ = SourceFormat::gguf;
        // A non-string general.architecture is an error for the loader to report; the
        // view itself only says "unknown".
        auto arch = m->gguf_->get_string_or("general.architecture", "");
        m->architecture_ = arch.ok() ? *arch : "";
        m->add_gguf_tensors();
    } else {
        m->format_ = SourceFormat::safetensors;
        const nlohmann::json* cfg = m->hf_config();
        if (cfg) {
            auto mt = cfg->find("model_type");
            if (mt != cfg->end() && mt->is_string()) m->architecture_ = mt->get<std::string>();
        }
        m->add_safetensors_tensors();
    }
    if (!m->architecture_.empty()) m->architecture_names_.push_back(m->architecture_);
    if (const nlohmann::json* cfg = m->hf_config()) {
        auto names = cfg->find("architectures");
        if (names != cfg->end() && names->is_array())
            for (const nlohmann::json& n : *names)
                if (n.is_string() && !n.get_ref<const std::string&>().empty()) m->architecture_names_.push_back(n);
    }
    for (size_t i = 0; i < m->tensors_.size(); ++i) m->index_.emplace(m->tensors_[i].name, i);
    return m;
}

void ModelSource::add_gguf_tensors() {
    tensors_.reserve(gguf_->tensors().size());
    for (const GgufTensorInfo& g : gguf_->tensors()) {
        SourceTensor t{};
        t.name = g.name;
        t.type = g.type;
        t.n_dims = int(g.n_dims);
        for (int d = 0; d < 4; ++d) t.ne[d] = g.ne[d];
        t.data = gguf_->tensor_data(g);
        t.nbytes = g.nbytes;
        t.dtype = std::string(ggml_type_name(g.type));
        t.file = &gguf_->file();
        tensors_.push_back(std::move(t));
    }
}

void ModelSource::add_safetensors_tensors() {
    tensors_.reserve(st_->tensors().size());
    for (const SafetensorsTensor& s : st_->tensors()) {
        SourceTensor t{};
        t.name = s.name;
        t.type = s.ggml_type;
        t.n_dims = s.n_dims;
        for (int d = 0; d < 4; ++d) t.ne[d] = s.ne[d];
        t.data = s.data;
        t.nbytes = s.nbytes;
        t.dtype = s.dtype;
        t.file = &st_->shard(s.shard);
        tensors_.push_back(std::move(t));
    }
}

const SourceTensor* ModelSource::find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const nlohmann::json* ModelSource::hf_config() const {
    if (!st_) return nullptr;
    auto cfg = st_->config();
    return cfg.ok() ? *cfg : nullptr;
}

void ModelSource::release_pages(const SourceTensor& t) const {
    if (t.file) t.file->release_pages(uint64_t(t.data - t.file->data()), t.nbytes);
}

uint64_t ModelSource::file_bytes() const {
    return gguf_ ? gguf_->file().size() : st_->file_bytes();
}

}  // namespace tdm
