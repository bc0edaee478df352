// SPDX-License-Identifier: Apache-2.0
// host/vk/work_splits.cpp: the per-device work-split table and its text file.
#include "vk/work_splits.h"

#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "common/file_read.h"
#include "vk/pipeline_cache_file.h"

namespace tdm::vk {
namespace {

constexpr uint64_t kMaxWorkSplitsFileBytes = 4u << 20;

bool valid_key(const std::string& k) {
    if (k.empty() || k.size() > kMaxWorkSplitKey) return false;
    for (char c : k)
        if (c <= ' ' || c == 0x7f) return false;
    return true;
}

}  // namespace

WorkSplits::WorkSplits(std::string path) : path_(std::move(path)) {}

WorkSplits::WorkSplits(WorkSplits&& o) noexcept
    : path_(std::move(o.path_)), entries_(std::move(o.entries_)), dirty_(o.dirty_) {}

WorkSplits& WorkSplits::operator=(WorkSplits&& o) noexcept {
    if (this != &o) {
        const std::scoped_lock lock(mutex_, o.mutex_);
        path_ = std::move(o.path_);
        entries_ = std::move(o.entries_);
        dirty_ = o.dirty_;
    }
    return *this;
}

Result<WorkSplits> WorkSplits::load(const std::string& path) {
    WorkSplits t(path);
    if (::access(path.c_str(), F_OK) != 0 && errno == ENOENT) return t;
    const std::string text = TDM_TRY(read_regular_file(path, kMaxWorkSplitsFileBytes, "work-split table"));
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line != kWorkSplitsHeader)
        return Error::format("work-split table {} does not start with '{}'", path, kWorkSplitsHeader);
    for (int n = 2; std::getline(in, line); ++n) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream ls(line);
        std::string key, shape;
        ls >> key >> shape;
        const std::string full = key + " " + shape;
        std::vector<uint32_t> values;
        long long v = 0;
        while (ls >> v) {
            if (v < 1 || v > 65536 || values.size() == kMaxWorkSplitValues)
                return Error::format("work-split table {} line {}: value {} out of range (1..65536, at most {})",
                                     path, n, v, kMaxWorkSplitValues);
            values.push_back(uint32_t(v));
        }
        if (!ls.eof() || !valid_key(key) || !valid_key(shape) || full.size() > kMaxWorkSplitKey || values.empty())
            return Error::format("work-split table {} line {} is not 'KERNEL SHAPE VALUE...'", path, n);
        t.entries_[full] = std::move(values);
    }
    return t;
}

std::optional<std::vector<uint32_t>> WorkSplits::find(const std::string& key) const {
    const std::lock_guard lock(mutex_);
    const auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    return it->second;
}

void WorkSplits::set(const std::string& key, std::vector<uint32_t> values) {
    const std::lock_guard lock(mutex_);
    auto& slot = entries_[key];
    if (slot != values) dirty_ = true;
    slot = std::move(values);
}

void WorkSplits::erase(const std::string& key) {
    const std::lock_guard lock(mutex_);
    if (entries_.erase(key) > 0) dirty_ = true;
}

size_t WorkSplits::size() const {
    const std::lock_guard lock(mutex_);
    return entries_.size();
}

std::map<std::string, std::vector<uint32_t>> WorkSplits::entries() const {
    const std::lock_guard lock(mutex_);
    return entries_;
}

Status WorkSplits::save() {
    const std::lock_guard lock(mutex_);
    if (!dirty_ || path_.empty()) return {};
    std::string text = std::string(kWorkSplitsHeader) +
                       "\n# KERNEL SHAPE VALUE...: the fastest work split measured here (tandem tune)\n";
    for (const auto& [key, values] : entries_) {
        text += key;
        for (uint32_t v : values) text += " " + std::to_string(v);
        text += "\n";
    }
    TDM_TRY(replace_file_atomically(path_, std::span<const char>(text.data(), text.size()), "work-split table"));
    dirty_ = false;
    return {};
}

}  // namespace tdm::vk
