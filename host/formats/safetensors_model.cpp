// SPDX-License-Identifier: Apache-2.0
// host/formats/safetensors_model.cpp: SafetensorsModel, a Hugging Face checkpoint as
// one tensor list: a single file, or model.safetensors.index.json whose weight_map
// names the shards (docs/formats/gguf.md B.3), plus config.json.
// Not here: the per-file header parser (safetensors.cpp).
#include "formats/safetensors.h"

#include "common/file_read.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <set>

namespace tdm {
namespace fs = std::filesystem;

namespace {

constexpr const char* kSingleName = "model.safetensors";
constexpr const char* kIndexName = "model.safetensors.index.json";

// Real files are far smaller (an index with 10,000 tensors is about 1 MiB); the limits
// only keep a hostile or mistaken path from being read into memory whole.
constexpr uint64_t kMaxConfigBytes = 16ull << 20;
constexpr uint64_t kMaxIndexBytes = 64ull << 20;

Result<nlohmann::json> read_json(const std::string& path, uint64_t max_bytes, std::string_view what) {
    const std::string text = TDM_TRY(read_regular_file(path, max_bytes, what));
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        return Error::format("{}: invalid JSON: {}", path, e.what());
    }
}

// Shard names come from an untrusted index: a plain file name in the same directory.
bool is_plain_file_name(const std::string& s) {
    return !s.empty() && s != "." && s != ".." && s.find('/') == std::string::npos &&
           s.find('\\') == std::string::npos && s.find('\0') == std::string::npos;
}

}  // namespace

SafetensorsModel::SafetensorsModel() = default;
SafetensorsModel::~SafetensorsModel() = default;

Result<std::unique_ptr<SafetensorsModel>> SafetensorsModel::open(const std::string& path) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return Error::format("{}: no such file or directory", path);
    if (!fs::is_directory(st)) return from_mapping(TDM_TRY(MappedFile::open(path)));

    std::unique_ptr<SafetensorsModel> m(new SafetensorsModel());
    m->path_ = path;
    const std::string index_path = (fs::path(path) / kIndexName).string();
    const std::string single_path = (fs::path(path) / kSingleName).string();
    if (fs::exists(index_path, ec)) {
        TDM_TRY(m->load_index(path, index_path));
    } else if (fs::exists(single_path, ec)) {
        auto file = TDM_TRY(MappedFile::open(single_path));
        TDM_TRY(m->add_shard(std::move(file)));
    } else {
        return Error::format("{}: directory has neither {} nor {}", path, kSingleName, kIndexName);
    }
    m->build_index();
    m->load_config(path);
    return m;
}

Result<std::unique_ptr<SafetensorsModel>> SafetensorsModel::from_mapping(std::unique_ptr<MappedFile> file) {
    std::unique_ptr<SafetensorsModel> m(new SafetensorsModel());
    m->path_ = file->path();
    std::string dir = fs::path(file->path()).parent_path().string();
    TDM_TRY(m->add_shard(std::move(file)));
    m->build_index();
    m->load_config(dir.empty() ? "." : dir);
    return m;
}

Status SafetensorsModel::add_shard(std::unique_ptr<MappedFile> file) {
    uint32_t shard = uint32_t(shards_.size());
    std::vector<SafetensorsTensor> ts = TDM_TRY(parse_safetensors(*file, shard));
    shards_.push_back(std::move(file));
    for (SafetensorsTensor& t : ts) tensors_.push_back(std::move(t));
    return {};
}

Status SafetensorsModel::load_index(const std::string& dir, const std::string& index_path) {
    nlohmann::json index = TDM_TRY(read_json(index_path, kMaxIndexBytes, "safetensors index"));
    auto wm = index.is_object() ? index.find("weight_map") : index.end();
    if (!index.is_object() || wm == index.end() || !wm->is_object())
        return Error::format("{}: no \"weight_map\" object", index_path);
    std::map<std::string, std::string> weight_map;  // tensor -> shard file name
    std::set<std::string> shard_names;              // sorted: shard 0 is -00001-of-...
    for (auto it = wm->begin(); it != wm->end(); ++it) {
        if (!it.value().is_string() || !is_plain_file_name(it.value().get<std::string>()))
            return Error::format("{}: weight_map entry '{}' must name a file in {}, found {}", index_path,
                                 it.key(), dir, it.value().dump());
        weight_map.emplace(it.key(), it.value().get<std::string>());
        shard_names.insert(it.value().get<std::string>());
    }
    if (shard_names.empty()) return Error::format("{}: weight_map is empty", index_path);

    std::map<std::string, std::string> found_in;  // tensor -> shard it was found in
    for (const std::string& name : shard_names) {
        size_t first = tensors_.size();
        auto file = TDM_TRY(MappedFile::open((fs::path(dir) / name).string()));
        TDM_TRY(add_shard(std::move(file)));
        for (size_t i = first; i < tensors_.size(); ++i) {
            const std::string& t = tensors_[i].name;
            auto [prev, inserted] = found_in.emplace(t, name);
            if (!inserted)
                return Error::format("{}: tensor '{}' is stored in both {} and {}", dir, t, prev->second,
                                     name);
            auto listed = weight_map.find(t);
            if (listed != weight_map.end() && listed->second != name)
                return Error::format("{}: weight_map puts tensor '{}' in {}, but it is in {}", index_path,
                                     t, listed->second, name);
        }
    }
    for (const auto& [t, shard] : weight_map)
        if (!found_in.count(t))
            return Error::format("{}: weight_map lists tensor '{}' in {}, which has no such tensor",
                                 index_path, t, shard);
    return {};
}

void SafetensorsModel::load_config(const std::string& dir) {
    config_path_ = (fs::path(dir) / "config.json").string();
    std::error_code ec;
    if (!fs::exists(config_path_, ec)) {
        config_error_ = Error::format("{}: not found (a Hugging Face model needs its config.json)",
                                      config_path_);
        return;
    }
    Result<nlohmann::json> j = read_json(config_path_, kMaxConfigBytes, "model config");
    if (!j.ok()) {
        config_error_ = j.error();
    } else if (!j->is_object()) {
        config_error_ = Error::format("{}: not a JSON object", config_path_);
    } else {
        config_ = std::make_unique<nlohmann::json>(std::move(*j));
        config_ok_ = true;
    }
}

void SafetensorsModel::build_index() {
    index_.clear();
    for (size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

const SafetensorsTensor* SafetensorsModel::find(std::string_view name) const {
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

uint64_t SafetensorsModel::file_bytes() const {
    uint64_t n = 0;
    for (const auto& s : shards_) n += s->size();
    return n;
}

void SafetensorsModel::release_pages(const SafetensorsTensor& t) const {
    const MappedFile& f = *shards_[t.shard];
    f.release_pages(uint64_t(t.data - f.data()), t.nbytes);
}

Result<const nlohmann::json*> SafetensorsModel::config() const {
    if (!config_ok_) return config_error_;
    return config_.get();
}

}  // namespace tdm
