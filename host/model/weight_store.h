/* SPDX-License-Identifier: Apache-2.0 */
// host/model/weight_store.h: the weights of one model (or draft head) on the
// device, loaded on a plugin's request with the transforms of the ABI
// (tdm_weight_request): shape check, f32 conversion, 1+w, -exp(w), row and
// column permutations, and tdm.weight_transforms' vector transforms — each
// applied once, here. Source pages are dropped from
// RSS after upload, so weights never sit twice in host memory.
#pragma once

#include <tandem/tandem.h>

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "formats/model_source.h"
#include "graph/weight.h"

namespace tdm {

class WeightStore {
public:
    // block_bytes: size of the device allocations weights are packed into
    // (a model's whole file is a good first guess; larger tensors get their own).
    WeightStore(vk::Device& device, std::string owner, uint64_t block_bytes = 256ull << 20);

    // Loads one weight. nullptr (with success) only for an absent optional tensor.
    Result<const DeviceWeight*> load(const ModelSource& src, const tdm_weight_request& req);
    // A 2-D table read only by token rows (tdm.host_rows): in device memory as load()
    // puts it, or kept in host memory (the source's mapping) when the policy says so.
    Result<const DeviceWeight*> load_token_table(const ModelSource& src, const tdm_weight_request& req);
    // A vector (a 1-D request) as f32 with the transforms of tdm.weight_transforms
    // (tdm_weight_transform bits: + the element index, one row per element) applied once.
    Result<const DeviceWeight*> load_vector(const ModelSource& src, const tdm_weight_request& req,
                                            uint32_t transforms);
    // A weight of values computed by the plugin (tdm.encoder load_f32): F32 [ne0, ne1], copied.
    Result<const DeviceWeight*> add_f32(std::string name, std::span<const float> values, int64_t ne0, int64_t ne1);
    // Where load_token_table puts a table: always in host memory, never, or when it is
    // at least `threshold_bytes` (auto; 0 = always).
    enum class HostTables { automatic, on, off };
    void set_host_tables(HostTables mode, uint64_t threshold_bytes) {
        host_tables_ = mode;
        host_threshold_ = threshold_bytes;
    }
    uint64_t host_bytes() const { return host_bytes_; }

    uint64_t device_bytes() const { return bytes_; }
    // The first weight loaded under this source tensor name (nullptr if none): a
    // draft head's view of its target's weights (tdm_host_api.target_weight).
    const DeviceWeight* find(std::string_view name) const;
    size_t count() const { return weights_.size(); }
    // Every weight loaded, in load order (e.g. for tuning their matmul shapes).
    std::vector<const DeviceWeight*> all() const;

    // Progress reporting: called after each weight with bytes loaded so far.
    void set_progress(std::function<void(uint64_t done)> fn) { progress_ = std::move(fn); }
    // Scan each source tensor for NaN/Inf before its first upload (model/weight_check.h);
    // on by default.
    void set_check_weights(bool on) { check_weights_ = on; }
    // Test hook: largest binding (forces row chunking).
    void set_upload_options(const WeightUploadOptions& o) { upload_ = o; }

private:
    vk::Device& device_;
    std::string owner_;
    vk::Arena arena_;
    std::vector<std::unique_ptr<DeviceWeight>> weights_;
    uint64_t bytes_ = 0;
    uint64_t source_bytes_ = 0;
    std::function<void(uint64_t)> progress_;
    WeightUploadOptions upload_;
    bool check_weights_ = true;
    HostTables host_tables_ = HostTables::off;
    uint64_t host_threshold_ = 0;
    uint64_t host_bytes_ = 0;  // tables kept in host memory
    std::unordered_set<const SourceTensor*> checked_;  // scanned once even when loaded in slabs
    std::unordered_map<const SourceTensor*, int64_t> slab_rows_read_;  // pages go once every row was read
};

// "[1024, 2048]"
std::string shape_string(const int64_t* ne, uint32_t n_dims);

}  // namespace tdm
