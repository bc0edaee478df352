// SPDX-License-Identifier: Apache-2.0
// host/cli/profile_json.cpp
#include "cli/profile_json.h"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstring>

namespace tdm::cli {

Result<std::unique_ptr<ProfileJsonWriter>> ProfileJsonWriter::open(const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return Error::format("--profile-json: cannot create '{}': {}", path, std::strerror(errno));
    return std::unique_ptr<ProfileJsonWriter>(new ProfileJsonWriter(f));
}

ProfileJsonWriter::~ProfileJsonWriter() { std::fclose(file_); }

void ProfileJsonWriter::write_run(std::span<const vk::ProfiledDispatch> run) {
    nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
    double total_ns = 0;
    const vk::DispatchNote* open_note = nullptr;  // the node the last entry belongs to
    for (const vk::ProfiledDispatch& d : run) {
        total_ns += d.ns;
        const nlohmann::ordered_json groups = {d.groups[0], d.groups[1], d.groups[2]};
        if (d.note && d.note == open_note) {
            nlohmann::ordered_json& e = nodes.back();
            e["kernels"].push_back(*d.kernel);
            e["workgroups"].push_back(groups);
            e["us"] = e["us"].get<double>() + d.ns / 1e3;
        } else {
            nlohmann::ordered_json e;
            if (d.note) {
                e["node"] = d.note->node;
                e["name"] = d.note->name;
                e["op"] = d.note->op;
                e["shape"] = d.note->shape;
                if (!d.note->weight_type.empty()) e["weight_type"] = d.note->weight_type;
                e["bytes_read"] = d.note->bytes_read;
            }
            e["kernels"] = {*d.kernel};
            e["workgroups"] = {groups};
            e["us"] = d.ns / 1e3;
            nodes.push_back(std::move(e));
        }
        open_note = d.note;
    }
    for (nlohmann::ordered_json& e : nodes) {
        const double us = e["us"].get<double>();
        if (e.contains("bytes_read") && us > 0) e["gb_per_s"] = double(e["bytes_read"].get<uint64_t>()) / us / 1e3;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    const nlohmann::ordered_json line = {{"run", runs_++}, {"gpu_us", total_ns / 1e3}, {"nodes", std::move(nodes)}};
    std::fputs((line.dump() + "\n").c_str(), file_);
    std::fflush(file_);
}

}  // namespace tdm::cli
