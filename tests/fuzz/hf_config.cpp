// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/hf_config.cpp: a Hugging Face model directory as ModelSource opens it: the
// input is model.safetensors.index.json, config.json and a list of metadata keys, split at
// NUL bytes. Two small valid shards sit next to them, so an index can name real files. The
// directory is opened (index and config parsing, shard cross-checks) and every key, plus the
// keys the in-tree plugins read, is asked for through the plugin metadata API
// (tdm_host_api.meta_*), whose dotted paths walk config.json ("text_config.layer_types.3").
// Seeds: the index and config.json of `tandem synth --format hf` models (fuzz_seeds.cpp).
#include "formats/model_source.h"
#include "fuzz_support.h"
#include "metadata_queries.h"
#include "writers/safetensors_writer.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

using namespace tdm;

namespace {

constexpr const char* kShards[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};

const std::string& model_dir() {
    static const std::string dir = [] {
        const std::string d = fuzz::scratch_dir() + "/hf";
        std::filesystem::create_directories(d);
        return d;
    }();
    return dir;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // Shard 1 holds "a" (F32 [2]) and "b" (F16 [2, 2]); shard 2 holds "c" (BF16 [3]).
    const float a[2] = {1.0f, -2.0f};
    const uint16_t b[4] = {0x3c00, 0x4000, 0x4200, 0x4400};
    const uint16_t c[3] = {0x3f80, 0x4000, 0x4040};
    std::vector<SafetensorsWriter> shards(2);
    Status added[3] = {shards[0].add_tensor("a", "F32", {2}, a, sizeof a),
                       shards[0].add_tensor("b", "F16", {2, 2}, b, sizeof b),
                       shards[1].add_tensor("c", "BF16", {3}, c, sizeof c)};
    for (const Status& st : added) FUZZ_CHECK(st.ok());
    for (int i = 0; i < 2; ++i) {
        const std::string path = model_dir() + "/" + kShards[i];
        if (Status st = shards[size_t(i)].write_file(path); !st.ok()) {
            std::fprintf(stderr, "hf_config: cannot write %s: %s\n", path.c_str(), st.error().message().c_str());
            std::abort();
        }
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto parts = fuzz::split_parts(data, size, 3);
    fuzz::write_scratch_file("hf/model.safetensors.index.json", parts[0]);
    fuzz::write_scratch_file("hf/config.json", parts[1]);
    auto source = ModelSource::open(model_dir());
    if (!source.ok()) {
        FUZZ_CHECK(!source.error().message().empty());
        return 0;
    }
    const ModelSource& s = **source;
    FUZZ_CHECK(s.format() == SourceFormat::safetensors);
    if (!s.hf_config()) FUZZ_CHECK(!s.safetensors()->config().ok());
    fuzz::query_plugin_keys(s);
    std::string_view keys = parts[2];
    while (!keys.empty()) {
        const size_t nl = keys.find('\n');
        fuzz::query_metadata(s, keys.substr(0, nl));
        if (nl == std::string_view::npos) break;
        keys.remove_prefix(nl + 1);
    }
    return 0;
}
