// SPDX-License-Identifier: Apache-2.0
// host/vk/pipeline.cpp
#include "vk/pipeline.h"

#include <zstd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <unordered_map>

#include "common/log.h"
#include "vk/pipeline_cache_file.h"

namespace tdm::vk {

// ---------------------------------------------------------------------------
// SPIR-V reflection: just enough to find set-0 bindings and their kinds.
// ---------------------------------------------------------------------------
Result<ShaderBindings> reflect_bindings(const uint32_t* code, size_t words) {
    if (words < 5 || code[0] != 0x07230203) return Error("not a SPIR-V module (bad magic)");
    enum : uint32_t {
        kOpTypeImage = 25, kOpTypeSampledImage = 27, kOpTypeStruct = 30, kOpTypePointer = 32,
        kOpVariable = 59, kOpDecorate = 71, kOpTypeArray = 28, kOpTypeRuntimeArray = 29,
    };
    enum : uint32_t { kDecBlock = 2, kDecBufferBlock = 3, kDecBinding = 33, kDecDescriptorSet = 34 };
    enum : uint32_t { kScUniformConstant = 0, kScUniform = 2, kScStorageBuffer = 12 };

    struct Var { uint32_t type_ptr; uint32_t storage; };
    std::unordered_map<uint32_t, uint32_t> binding, set, pointee, ptr_storage, array_elem;
    std::unordered_map<uint32_t, uint32_t> image_sampled, image_dim;  // image id -> Sampled, Dim
    std::unordered_map<uint32_t, uint32_t> sampled_image;             // sampled image -> image
    std::unordered_map<uint32_t, bool> buffer_block, block;
    std::unordered_map<uint32_t, Var> vars;

    size_t i = 5;
    while (i < words) {
        const uint32_t op = code[i] & 0xffff, len = code[i] >> 16;
        if (len == 0 || i + len > words) return Error("malformed SPIR-V instruction stream");
        const uint32_t* a = code + i + 1;
        switch (op) {
            case kOpDecorate:
                if (len >= 4 && a[1] == kDecBinding) binding[a[0]] = a[2];
                if (len >= 4 && a[1] == kDecDescriptorSet) set[a[0]] = a[2];
                if (len >= 3 && a[1] == kDecBufferBlock) buffer_block[a[0]] = true;
                if (len >= 3 && a[1] == kDecBlock) block[a[0]] = true;
                break;
            case kOpTypePointer:
                if (len >= 4) { ptr_storage[a[0]] = a[1]; pointee[a[0]] = a[2]; }
                break;
            case kOpTypeImage:
                if (len >= 9) { image_dim[a[0]] = a[2]; image_sampled[a[0]] = a[6]; }
                break;
            case kOpTypeSampledImage:
                if (len >= 3) sampled_image[a[0]] = a[1];
                break;
            case kOpTypeArray:
            case kOpTypeRuntimeArray:
                if (len >= 3) array_elem[a[0]] = a[1];
                break;
            case kOpVariable:
                if (len >= 4) vars[a[1]] = {a[0], a[2]};
                break;
            default: break;
        }
        i += len;
    }

    ShaderBindings out;
    for (const auto& [id, var] : vars) {
        auto b = binding.find(id);
        if (b == binding.end()) continue;
        if (set.count(id) && set[id] != 0) return Error("shader uses descriptor set != 0");
        uint32_t t = pointee.count(var.type_ptr) ? pointee[var.type_ptr] : 0;
        // Arrays of arrays: a handful deep in real shaders; a plugin's module is
        // untrusted and may loop an array type back onto itself.
        for (int hops = 0; array_elem.count(t); ++hops) {
            if (hops == 16) return Error::format("binding {}: array types nest more than 16 deep (a cycle?)", b->second);
            t = array_elem[t];
        }
        VkDescriptorType dt;
        if (var.storage == kScStorageBuffer || (var.storage == kScUniform && buffer_block.count(t))) {
            dt = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        } else if (var.storage == kScUniform) {
            dt = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER;
        } else if (var.storage == kScUniformConstant) {
            uint32_t img = sampled_image.count(t) ? sampled_image[t] : t;
            if (!image_dim.count(img) || image_dim[img] != 5 /* Buffer */)
                return Error("shader uses an image/sampler that is not a texel buffer");
            dt = image_sampled[img] == 2 ? VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER
                                         : VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
        } else {
            return Error::format("unsupported storage class {} for binding {}", var.storage, b->second);
        }
        if (out.types.size() <= b->second) out.types.resize(b->second + 1, VK_DESCRIPTOR_TYPE_MAX_ENUM);
        out.types[b->second] = dt;
    }
    // Holes (VK_DESCRIPTOR_TYPE_MAX_ENUM) are bindings the compiler removed as
    // unused in this variant; the host still passes them and they are skipped.
    return out;
}

// ---------------------------------------------------------------------------
// Persistent pipeline cache
// ---------------------------------------------------------------------------
std::string user_cache_dir() {
    std::filesystem::path dir;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
        dir = x;
    else if (const char* h = std::getenv("HOME"); h && *h)
        dir = std::filesystem::path(h) / ".cache";
    else
        return {};
    dir /= "tandem";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        TDM_LOG_WARN("vulkan", "no persistent pipeline cache: cannot create {}: {}", dir.string(), ec.message());
        return {};
    }
    return dir.string();
}

namespace {

std::string uuid_hex(const uint8_t* u) {
    std::string s;
    for (uint32_t i = 0; i < VK_UUID_SIZE; ++i) s += fmt::format("{:02x}", u[i]);
    return s;
}

}  // namespace

std::vector<uint8_t> decompress_pipeline_cache(std::string_view z) {
    constexpr unsigned long long kMaxBytes = 512ull << 20;
    // A frame expanding up to this many times is decoded in one pass into memory of its
    // claimed size; beyond that the claim is not trusted (see below).
    constexpr unsigned long long kOnePassRatio = 32;
    const unsigned long long n = ZSTD_getFrameContentSize(z.data(), z.size());
    if (n == ZSTD_CONTENTSIZE_ERROR || n == ZSTD_CONTENTSIZE_UNKNOWN || n > kMaxBytes) return {};
    std::vector<uint8_t> out;
    if (n <= kOnePassRatio * z.size()) {
        if (ZSTD_findFrameCompressedSize(z.data(), z.size()) != z.size()) return {};  // one frame, whole
        out.resize(n);
        const size_t rc = ZSTD_decompress(out.data(), out.size(), z.data(), z.size());
        if (ZSTD_isError(rc) || rc != n) return {};
        return out;
    }
    // The frame header's size is the file's claim, not a fact: output memory grows only as
    // decompression really produces bytes (doubling from 4 KiB), so a 9-byte header claiming
    // 512 MiB costs nothing.
    std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
    if (!ctx) return {};
    ZSTD_inBuffer in{z.data(), z.size(), 0};
    while (true) {
        const size_t done = out.size();
        const unsigned long long want = std::max<unsigned long long>(4096, 2ull * done);
        out.resize(std::min<unsigned long long>(n + 1, want));  // +1: room to see too much
        ZSTD_outBuffer o{out.data(), out.size(), done};
        const size_t rc = ZSTD_decompressStream(ctx.get(), &o, &in);
        out.resize(o.pos);
        if (ZSTD_isError(rc) || out.size() > n) return {};
        if (rc == 0) break;  // the frame is complete
        if (o.pos == done && in.pos == in.size) return {};  // truncated: no progress, no input left
    }
    if (out.size() != n || in.pos != in.size) return {};
    return out;
}

PipelineManager::PipelineManager(Device& device) : device_(device) {
    std::vector<uint8_t> initial;
    const std::string dir = user_cache_dir();
    if (!dir.empty() && !std::getenv("TANDEM_NO_PIPELINE_CACHE")) {
        const DeviceCaps& c = device.caps();
        cache_path_ = fmt::format("{}/pipelines-{:04x}-{:04x}-{}.zst", dir, c.vendor_id, c.device_id,
                                  uuid_hex(c.pipeline_cache_uuid));
        const std::string splits_path = fmt::format("{}/splits-{:04x}-{:04x}-{}.txt", dir, c.vendor_id, c.device_id,
                                                    uuid_hex(c.pipeline_cache_uuid));
        if (auto splits = WorkSplits::load(splits_path); splits.ok())
            splits_ = std::move(*splits);
        else {  // only speed is lost; `tandem tune` writes a new one
            TDM_LOG_WARN("vulkan", "{}; using the default work splits", splits.error().message());
            splits_ = WorkSplits(splits_path);
        }
        auto loaded = load_pipeline_cache_file(cache_path_);
        if (loaded.ok())
            initial = std::move(*loaded);
        else  // only compile time is lost; the next save replaces the file
            TDM_LOG_WARN("vulkan", "{}; starting with an empty pipeline cache", loaded.error().message());
    }
    VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    ci.initialDataSize = initial.size();
    ci.pInitialData = initial.empty() ? nullptr : initial.data();
    // A corrupt or foreign cache blob is the driver's to reject; retry empty.
    if (device.fn().vkCreatePipelineCache(device.handle(), &ci, nullptr, &cache_) != VK_SUCCESS) {
        ci.initialDataSize = 0;
        ci.pInitialData = nullptr;
        initial.clear();
        if (device.fn().vkCreatePipelineCache(device.handle(), &ci, nullptr, &cache_) != VK_SUCCESS)
            cache_ = VK_NULL_HANDLE;
    }
    loaded_cache_bytes_ = initial.size();
}

Status PipelineManager::save_cache() {
    TDM_TRY(splits_.save());
    if (!cache_ || cache_path_.empty()) return {};
    const DeviceFuncs& f = device_.fn();
    size_t n = 0;
    TDM_VK_CHECK(f.vkGetPipelineCacheData(device_.handle(), cache_, &n, nullptr), "reading pipeline cache");
    if (n == 0 || n == loaded_cache_bytes_) return {};
    std::vector<uint8_t> data(n);
    TDM_VK_CHECK(f.vkGetPipelineCacheData(device_.handle(), cache_, &n, data.data()), "reading pipeline cache");
    TDM_TRY(save_pipeline_cache_file(cache_path_, data));
    loaded_cache_bytes_ = n;
    return {};
}

PipelineManager::~PipelineManager() {
    if (auto st = save_cache(); !st.ok()) TDM_LOG_WARN("vulkan", "{}", st.error().message());
    const DeviceFuncs& f = device_.fn();
    for (auto& [key, p] : pipelines_) {
        f.vkDestroyPipeline(device_.handle(), p->pipeline_, nullptr);
        f.vkDestroyPipelineLayout(device_.handle(), p->layout_, nullptr);
        f.vkDestroyDescriptorSetLayout(device_.handle(), p->set_layout_, nullptr);
    }
    if (cache_) f.vkDestroyPipelineCache(device_.handle(), cache_, nullptr);
}

Result<uint32_t> required_subgroup_size(const DeviceCaps& caps, SubgroupShape shape, uint32_t local_size,
                                        std::string_view shader) {
    if (shape == SubgroupShape::any) return 0u;
    const uint32_t n = caps.subgroup_size;
    if (!caps.subgroup_size_fixable)
        return Error::format("{} divides its work by subgroups of {} lanes, but {} cannot fix the subgroup size of a "
                             "compute pipeline (it lacks Vulkan 1.3's subgroupSizeControl and computeFullSubgroups for "
                             "compute shaders), so the driver could run another size",
                             shader, n, caps.name);
    if (local_size == 0 || local_size % n != 0)
        return Error::format("internal: {} asks for whole subgroups of {} lanes in a workgroup of {}", shader, n,
                             local_size);
    if (caps.max_compute_workgroup_subgroups && local_size / n > caps.max_compute_workgroup_subgroups)
        return Error::format("{}: a workgroup of {} subgroups is more than the {} that {} runs with a fixed subgroup "
                             "size",
                             shader, local_size / n, caps.max_compute_workgroup_subgroups, caps.name);
    return n;
}

Result<const Pipeline*> PipelineManager::get(std::string_view name, const std::vector<uint32_t>& spec,
                                             SubgroupShape shape) {
    std::lock_guard<std::mutex> lock(mutex_);
    // a fixed subgroup size makes another pipeline of the same shader and constants
    std::string key(name);
    if (shape == SubgroupShape::device_size) key += "#full-subgroups";
    if (auto it = pipelines_.find(std::make_pair(key, spec)); it != pipelines_.end()) return it->second.get();
    const ShaderBlob* blob = find_shader(name);
    if (!blob) return Error::format("internal: no embedded shader named '{}'", name);
    const uint32_t subgroup_size =
        TDM_TRY(required_subgroup_size(device_.caps(), shape, spec.empty() ? 1 : spec[0], name));
    ShaderBindings bindings = TDM_TRY_CTX(reflect_bindings(blob->code, blob->words), fmt::format("shader {}", name));
    return create(std::move(key), name, std::span<const uint32_t>(blob->code, blob->words), "main",
                  std::move(bindings), 128, spec, subgroup_size);
}

Result<const Pipeline*> PipelineManager::get_module(const ShaderModule& m, const std::vector<uint32_t>& spec) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = pipelines_.find(std::make_pair(m.key, spec)); it != pipelines_.end()) return it->second.get();
    ShaderBindings bindings;
    bindings.types.assign(m.n_storage_buffers, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER);
    return create(m.key, m.name, m.code, m.entry_point.c_str(), std::move(bindings), m.push_bytes, spec);
}

Result<const Pipeline*> PipelineManager::create(std::string key, std::string_view name,
                                                 std::span<const uint32_t> code, const char* entry_point,
                                                 ShaderBindings bindings, uint32_t push_bytes,
                                                 const std::vector<uint32_t>& spec, uint32_t subgroup_size) {
    auto p = std::make_unique<Pipeline>();
    p->bindings_ = std::move(bindings);
    p->local_size_ = spec.empty() ? 1 : spec[0];
    p->required_subgroup_size_ = subgroup_size;
    p->name_ = std::string(name);
    const DeviceFuncs& f = device_.fn();
    VkDevice dev = device_.handle();
    // Whatever fails below leaves no Vulkan object behind.
    struct Cleanup {
        const DeviceFuncs& f;
        VkDevice dev;
        Pipeline* p;
        ~Cleanup() {
            if (!p) return;
            if (p->layout_) f.vkDestroyPipelineLayout(dev, p->layout_, nullptr);
            if (p->set_layout_) f.vkDestroyDescriptorSetLayout(dev, p->set_layout_, nullptr);
        }
    } cleanup{f, dev, p.get()};

    std::vector<VkDescriptorSetLayoutBinding> lb;
    for (uint32_t b = 0; b < p->bindings_.types.size(); ++b) {
        if (p->bindings_.types[b] == VK_DESCRIPTOR_TYPE_MAX_ENUM) continue;
        VkDescriptorSetLayoutBinding x{};
        x.binding = b;
        x.descriptorType = p->bindings_.types[b];
        x.descriptorCount = 1;
        x.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
        lb.push_back(x);
    }
    VkDescriptorSetLayoutCreateInfo dl{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    dl.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    dl.bindingCount = uint32_t(lb.size());
    dl.pBindings = lb.data();
    TDM_VK_CHECK(f.vkCreateDescriptorSetLayout(dev, &dl, nullptr, &p->set_layout_), "descriptor set layout");

    VkPushConstantRange pcr{VK_SHADER_STAGE_COMPUTE_BIT, 0, push_bytes};
    VkPipelineLayoutCreateInfo pl{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &p->set_layout_;
    pl.pushConstantRangeCount = push_bytes ? 1 : 0;
    pl.pPushConstantRanges = &pcr;
    TDM_VK_CHECK(f.vkCreatePipelineLayout(dev, &pl, nullptr, &p->layout_), "pipeline layout");

    VkShaderModuleCreateInfo sm{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    sm.codeSize = code.size() * 4;
    sm.pCode = code.data();
    VkShaderModule module = VK_NULL_HANDLE;
    TDM_VK_CHECK(f.vkCreateShaderModule(dev, &sm, nullptr, &module), fmt::format("shader module {}", name));

    std::vector<VkSpecializationMapEntry> entries(spec.size());
    for (uint32_t k = 0; k < spec.size(); ++k) entries[k] = {k, k * 4, 4};
    VkSpecializationInfo si{uint32_t(entries.size()), entries.data(), spec.size() * 4, spec.data()};

    VkComputePipelineCreateInfo ci{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    ci.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
    ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    ci.stage.module = module;
    ci.stage.pName = entry_point;
    ci.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
    // Unless the size is fixed and subgroups full, a driver may compile for a narrower SIMD
    // width and launch subgroups of the reported size with lanes inactive (or, with SPIR-V
    // 1.6, another size): a work split that counts subgroups and lanes would skip rows or units.
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo required{
        VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO};
    if (subgroup_size) {
        required.requiredSubgroupSize = subgroup_size;
        ci.stage.pNext = &required;
        ci.stage.flags = VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    }
    ci.layout = p->layout_;
    // The debug log shows what creation costs: most drivers compile here (lavapipe compiles with
    // LLVM at the first dispatch instead), and their disk caches make later runs quick.
    const auto t0 = std::chrono::steady_clock::now();
    VkResult r = f.vkCreateComputePipelines(dev, cache_, 1, &ci, nullptr, &p->pipeline_);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    f.vkDestroyShaderModule(dev, module, nullptr);
    if (r != VK_SUCCESS) return Error::format("creating pipeline {}: {}", name, result_name(r));
    cleanup.p = nullptr;

    if (!spec.empty()) {
        p->name_ += "<";
        for (size_t k = 0; k < spec.size(); ++k) p->name_ += (k ? "," : "") + std::to_string(spec[k]);
        p->name_ += ">";
    }
    TDM_LOG_DEBUG("vulkan", "pipeline {} created in {:.1f} ms", p->name_, ms);
    const Pipeline* out = p.get();
    pipelines_.emplace(std::make_pair(std::move(key), spec), std::move(p));
    return out;
}

}  // namespace tdm::vk
