// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/pipeline_cache.cpp: what happens to a pipeline cache file at start-up
// (vk::PipelineManager): the file is decompressed (vk::decompress_pipeline_cache) and the
// result, or for inputs that are no zstd frame the raw bytes (as a file a bit flip turned
// into garbage after decompression would be), is handed to vkCreatePipelineCache on the
// Vulkan device (lavapipe here), which must reject what is not its own cache without
// crashing. A cache the driver accepts is read back once (vkGetPipelineCacheData).
// Seeds: a real cache file written by a PipelineManager (fuzz_seeds.cpp).
#include "fuzz_support.h"
#include "vk/device.h"
#include "vk/pipeline.h"

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

using namespace tdm;

namespace {

vk::Device& device() {
    static std::unique_ptr<vk::Device> dev = [] {
        auto d = vk::Device::create({});
        if (!d.ok()) {
            std::fprintf(stderr, "pipeline_cache: no Vulkan device: %s\n", d.error().message().c_str());
            std::abort();
        }
        return std::move(*d);
    }();
    return *dev;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    (void)device();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::vector<uint8_t> decompressed = vk::decompress_pipeline_cache(fuzz::as_text(data, size));
    const uint8_t* blob = decompressed.empty() ? data : decompressed.data();
    const size_t blob_size = decompressed.empty() ? size : decompressed.size();

    vk::Device& dev = device();
    VkPipelineCacheCreateInfo ci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
    ci.initialDataSize = blob_size;
    ci.pInitialData = blob_size ? blob : nullptr;
    VkPipelineCache cache = VK_NULL_HANDLE;
    if (dev.fn().vkCreatePipelineCache(dev.handle(), &ci, nullptr, &cache) != VK_SUCCESS) return 0;
    size_t n = 0;
    FUZZ_CHECK(dev.fn().vkGetPipelineCacheData(dev.handle(), cache, &n, nullptr) == VK_SUCCESS);
    std::vector<uint8_t> back(n);
    FUZZ_CHECK(dev.fn().vkGetPipelineCacheData(dev.handle(), cache, &n, back.data()) == VK_SUCCESS);
    dev.fn().vkDestroyPipelineCache(dev.handle(), cache, nullptr);
    return 0;
}
