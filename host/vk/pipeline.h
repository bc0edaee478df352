/* SPDX-License-Identifier: Apache-2.0 */
// host/vk/pipeline.h: compute pipelines from embedded SPIR-V.
//
// Shaders are compiled at build time and embedded (shaders/CMakeLists.txt);
// descriptor bindings are read from the SPIR-V itself, so a shader and its
// host-side layout cannot drift apart. Sizes known when the pipeline is created
// are specialization constants (constant_id i <- values[i]; id 0 is the
// workgroup size by convention); per-dispatch values are push constants.
// A kernel whose work split counts subgroups (gl_NumSubgroups, gl_SubgroupSize: the
// matmuls' "mv" and "ks" layouts, matmul_id) asks for SubgroupShape::device_size: its
// pipeline runs exactly the device's reported subgroup size in full subgroups, the size
// the host divided the work by, whatever size the driver would have picked.
// A VkPipelineCache is kept in $XDG_CACHE_HOME/tandem (zstd-compressed) so the
// driver's JIT work is reused across runs. SPIR-V the host did not embed (a
// plugin's custom op) goes through the same path with a layout given by its
// owner (get_module).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "vk/device.h"
#include "vk/work_splits.h"

namespace tdm::vk {

struct ShaderBlob {
    const char* name;
    const uint32_t* code;
    size_t words;
};

// The embedded shader registry (generated at build time).
const ShaderBlob* find_shader(std::string_view name);
size_t shader_count();
const ShaderBlob& shader_at(size_t i);

// How a pipeline's lanes must be grouped into subgroups.
enum class SubgroupShape : uint8_t {
    any,          // the driver's choice: the kernel's results and coverage do not depend on it
    device_size,  // DeviceCaps::subgroup_size lanes per subgroup, every subgroup full
};

// The subgroup size a pipeline of `shader` with a workgroup of `local_size` lanes must be
// created with (0: the driver's choice), or why this device cannot run it so.
Result<uint32_t> required_subgroup_size(const DeviceCaps& caps, SubgroupShape shape, uint32_t local_size,
                                        std::string_view shader);

struct ShaderBindings {
    // index = binding number (set 0); VK_DESCRIPTOR_TYPE_MAX_ENUM = not used by this variant
    std::vector<VkDescriptorType> types;
};
// Reads set-0 bindings from SPIR-V; error if the module is malformed.
Result<ShaderBindings> reflect_bindings(const uint32_t* code, size_t words);

class Pipeline {
public:
    const std::string& name() const { return name_; }
    VkPipeline handle() const { return pipeline_; }
    VkPipelineLayout layout() const { return layout_; }
    const std::vector<VkDescriptorType>& bindings() const { return bindings_.types; }
    uint32_t local_size() const { return local_size_; }
    // The subgroup size it was created to run with, in full subgroups; 0: the driver's choice.
    uint32_t required_subgroup_size() const { return required_subgroup_size_; }

private:
    friend class PipelineManager;
    std::string name_;  // shader name plus specialization, for logs and profiles
    VkPipeline pipeline_ = VK_NULL_HANDLE;
    VkPipelineLayout layout_ = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    ShaderBindings bindings_;
    uint32_t local_size_ = 1;
    uint32_t required_subgroup_size_ = 0;
};

// SPIR-V from outside the host (a plugin's custom op), with its layout: storage
// buffers at bindings 0 .. n_storage_buffers - 1 of set 0 and a push-constant
// range of push_bytes.
struct ShaderModule {
    std::string key;          // unique for the process's life: the cache key ("custom#7:myplugin.gate")
    std::string name;         // for logs and profiles
    std::span<const uint32_t> code;
    std::string entry_point;  // "main"
    uint32_t n_storage_buffers = 0;
    uint32_t push_bytes = 0;
};

class PipelineManager {
public:
    // Loads the persistent cache (if any) for this device.
    explicit PipelineManager(Device& device);
    ~PipelineManager();  // saves the cache when it grew
    PipelineManager(const PipelineManager&) = delete;
    PipelineManager& operator=(const PipelineManager&) = delete;

    // Returns a pipeline for shader `name` with specialization constants
    // `spec` (spec[0] = workgroup size) and subgroups of `shape`. Pipelines are created
    // once and kept.
    Result<const Pipeline*> get(std::string_view name, const std::vector<uint32_t>& spec,
                                SubgroupShape shape = SubgroupShape::any);
    // The same for a module the host did not embed, compiled at first use and
    // kept under m.key and spec.
    Result<const Pipeline*> get_module(const ShaderModule& m, const std::vector<uint32_t>& spec);

    Status save_cache();
    const std::string& cache_path() const { return cache_path_; }
    // The work splits measured on this device (work_splits.h), loaded beside the cache and
    // saved with it.
    WorkSplits& work_splits() { return splits_; }
    const WorkSplits& work_splits() const { return splits_; }
    size_t pipeline_count() const { return pipelines_.size(); }

private:
    // Creates and keeps a pipeline (mutex_ held).
    Result<const Pipeline*> create(std::string key, std::string_view name, std::span<const uint32_t> code,
                                   const char* entry_point, ShaderBindings bindings, uint32_t push_bytes,
                                   const std::vector<uint32_t>& spec, uint32_t subgroup_size = 0);

    Device& device_;
    VkPipelineCache cache_ = VK_NULL_HANDLE;
    std::string cache_path_;
    size_t loaded_cache_bytes_ = 0;
    WorkSplits splits_;
    std::mutex mutex_;
    std::map<std::pair<std::string, std::vector<uint32_t>>, std::unique_ptr<Pipeline>> pipelines_;
};

// $XDG_CACHE_HOME/tandem or ~/.cache/tandem (created if missing); "" if neither works.
std::string user_cache_dir();

// The contents of a pipeline cache file (one zstd frame, as save_cache writes it); empty
// when the file is not one (corrupt, truncated, over 512 MiB): the run starts with an
// empty cache. The driver checks the contents' own header (vkCreatePipelineCache).
std::vector<uint8_t> decompress_pipeline_cache(std::string_view file_bytes);

}  // namespace tdm::vk
