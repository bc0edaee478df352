// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/fuzz_seeds.cpp: writes the generated seed corpora, one directory per harness,
// from the synthetic model writers (plugins/qwen-nextn/synth, host/writers, host/synth): small
// files in the layouts tandem reads, so that fuzzing starts from inputs that get deep into
// each parser. Generated rather than committed (the models are a few MB; the seeds are the
// small parts of them). Usage: fuzz_seeds OUT_DIR (it creates OUT_DIR/<harness>/).
// Hand-written seeds are committed under tests/fuzz/corpus/<harness>/ instead.
#include "config/config.h"
#include "formats/gguf.h"
#include "formats/safetensors.h"
#include "fuzz_support.h"
#include "qwen-nextn/synth/qwen35_synth.h"
#include "qwen-nextn/synth/qwen3_synth.h"
#include "support/gguf_builder.h"
#include "synth/synth_vocab.h"
#include "vk/device.h"
#include "vk/pipeline.h"
#include "writers/gguf_writer.h"
#include "writers/safetensors_writer.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

using namespace tdm;
namespace fs = std::filesystem;

namespace {

std::string g_out;

[[noreturn]] void die(const std::string& what) {
    std::fprintf(stderr, "fuzz_seeds: %s\n", what.c_str());
    std::exit(1);
}

void check(const Status& st, const std::string& what) {
    if (!st.ok()) die(what + ": " + st.error().message());
}

void seed(const std::string& harness, const std::string& name, std::string_view bytes) {
    const fs::path dir = fs::path(g_out) / harness;
    fs::create_directories(dir);
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    if (!out) die("cannot write " + (dir / name).string());
}

std::string joined(std::initializer_list<std::string_view> parts) {  // the harnesses' NUL split
    std::string out;
    bool first = true;
    for (std::string_view p : parts) {
        if (!first) out.push_back('\0');
        out.append(p);
        first = false;
    }
    return out;
}

// A GGUF keeping a synthetic model's metadata and only its tensors of at most max_bytes
// (norms): the same keys a model load reads, at a size libFuzzer mutates quickly.
std::string small_copy(const GgufFile& f, uint64_t max_bytes, bool keep_tokenizer) {
    GgufWriter w;
    for (const GgufKV& kv : f.kvs()) {
        if (!keep_tokenizer && kv.key.starts_with("tokenizer.")) continue;
        if (kv.key == "general.alignment") continue;  // the writer sets its own
        w.add_value(kv.key, kv.value);
    }
    for (const GgufTensorInfo& t : f.tensors()) {
        if (t.nbytes > max_bytes) continue;
        std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
        check(w.add_tensor(t.name, t.type, ne, f.tensor_data(t), t.nbytes), "copying " + t.name);
    }
    auto bytes = w.to_bytes();
    if (!bytes.ok()) die(bytes.error().message());
    return std::move(*bytes);
}

// A safetensors file of the model's tensors of at most max_bytes, header as the writer lays it out.
std::string small_safetensors(const std::string& path, uint64_t max_bytes) {
    auto file = MappedFile::open(path);
    if (!file.ok()) die(file.error().message());
    auto tensors = parse_safetensors(**file, 0);
    if (!tensors.ok()) die(tensors.error().message());
    SafetensorsWriter w;
    w.add_metadata("format", "pt");
    for (const SafetensorsTensor& t : *tensors)
        if (t.nbytes <= max_bytes) check(w.add_tensor(t.name, t.dtype, t.shape, t.data, t.nbytes), t.name);
    auto bytes = w.to_bytes();
    if (!bytes.ok()) die(bytes.error().message());
    return std::move(*bytes);
}

std::string slurp(const std::string& path) { return fuzz::read_file_or_die(path); }

void model_seeds(const std::string& tmp) {
    auto q3 = synth::qwen3_preset("tiny");
    if (!q3.ok()) die(q3.error().message());
    check(synth::synth_qwen3_gguf(tmp + "/qwen3.gguf", *q3, {}), "qwen3 gguf");
    check(synth::synth_qwen3_hf(tmp + "/qwen3-hf", *q3, {}), "qwen3 hf");
    for (const char* preset : {"tiny", "tiny-moe"}) {
        auto q35 = synth::qwen35_preset(preset);
        if (!q35.ok()) die(q35.error().message());
        const std::string name = std::string("qwen35-") + preset;
        check(synth::synth_qwen35_gguf(tmp + "/" + name + ".gguf", *q35, {}), name + " gguf");
        check(synth::synth_qwen35_hf(tmp + "/" + name + "-hf", *q35, {}), name + " hf");
    }

    seed("gguf", "small-valid.gguf", test::small_valid_gguf());
    GgufWriter swa;  // an ARRAY of BOOL, as gemma4.attention.sliding_window_pattern is written
    swa.add_string("general.architecture", "gemma4");
    swa.add_array("gemma4.attention.sliding_window_pattern", std::vector<bool>{true, true, true, true, true, false});
    auto swa_bytes = swa.to_bytes();
    if (!swa_bytes.ok()) die(swa_bytes.error().message());
    seed("gguf", "bool-array.gguf", *swa_bytes);
    for (const char* name : {"qwen3", "qwen35-tiny", "qwen35-tiny-moe"}) {
        auto f = GgufFile::open(tmp + "/" + name + ".gguf");
        if (!f.ok()) die(f.error().message());
        seed("gguf", std::string(name) + "-hparams.gguf", small_copy(**f, 512, false));
        seed("gguf", std::string(name) + "-with-vocab.gguf", small_copy(**f, 0, true));
    }

    // hf_config: index naming the harness's two fixed shards, each synthetic config.json, keys.
    const std::string index = R"({"metadata": {"total_size": 30}, "weight_map": {
  "a": "model-00001-of-00002.safetensors", "b": "model-00001-of-00002.safetensors",
  "c": "model-00002-of-00002.safetensors"}})";
    const std::string keys = "hidden_size\ntext_config.layer_types.2\nrope_parameters.rope_theta\n"
                             "eos_token_id\nlayer_types.1\na\nc";
    for (const char* name : {"qwen3-hf", "qwen35-tiny-hf", "qwen35-tiny-moe-hf"}) {
        const std::string dir = tmp + "/" + name;
        seed("hf_config", name, joined({index, slurp(dir + "/config.json"), keys}));
        if (fs::exists(dir + "/model.safetensors"))
            seed("safetensors", std::string(name) + ".safetensors", small_safetensors(dir + "/model.safetensors", 512));
        for (const auto& e : fs::directory_iterator(dir))
            if (e.path().extension() == ".safetensors" && e.path().filename() != "model.safetensors")
                seed("safetensors", std::string(name) + "-" + e.path().filename().string(),
                     small_safetensors(e.path().string(), 512));
        if (fs::exists(dir + "/model.safetensors.index.json"))
            seed("hf_config", std::string(name) + "-own-index",
                 joined({slurp(dir + "/model.safetensors.index.json"), slurp(dir + "/config.json"), keys}));
        seed("tokenizer_json", name,
             joined({slurp(dir + "/tokenizer.json"), slurp(dir + "/tokenizer_config.json"), "Hello <|im_end|>"}));
    }
}

void tokenizer_seeds() {
    auto v = synth::synth_vocab(300);
    if (!v.ok()) die(v.error().message());
    seed("tokenizer_json", "synth-300",
         joined({synth::synth_tokenizer_json(*v), synth::synth_tokenizer_config_json(*v, 4096), "the cat sat"}));
    seed("tokenizer_json", "synth-300-no-config", synth::synth_tokenizer_json(*v));

    // tokenize: the golden texts of both fixtures, each under a few selector bytes.
    int n = 0;
    for (const char* name : {"qwen3", "gemma3"}) {
        std::istringstream lines(fuzz::read_fixture_or_die(std::string("tokenizers/") + name + "/golden.jsonl"));
        std::string line;
        while (std::getline(lines, line)) {
            const std::string text = nlohmann::json::parse(line).at("text").get<std::string>();
            for (uint8_t selector : {uint8_t(n % 6), uint8_t(0x30 | ((n + 3) % 6))}) {
                seed("tokenize", "golden-" + std::to_string(n) + "-" + std::to_string(selector),
                     std::string(1, char(selector)) + text);
            }
            ++n;
        }
    }
}

void config_seeds() {
    const std::string commented(default_config_text());
    seed("config_toml", "default-commented.toml", commented);
    std::string uncommented;  // every "# key = value" line made live
    std::istringstream lines(commented);
    std::string line;
    while (std::getline(lines, line)) {
        const size_t eq = line.find(" = ");
        if (line.starts_with("# ") && eq != std::string::npos && line.find(' ', 2) == eq)
            line = line.substr(2);
        uncommented += line + "\n";
    }
    seed("config_toml", "default-uncommented.toml", uncommented);
}

void pipeline_cache_seeds(const std::string& tmp) {
    setenv("XDG_CACHE_HOME", tmp.c_str(), 1);
    unsetenv("TANDEM_NO_PIPELINE_CACHE");
    auto dev = vk::Device::create({});
    if (!dev.ok()) die(dev.error().message());
    std::string cache_path;
    {
        vk::PipelineManager pm(**dev);
        for (size_t i = 0; i < vk::shader_count() && i < 2; ++i) {
            const vk::ShaderBlob& s = vk::shader_at(i);
            (void)pm.get(s.name, {64});  // a shader that wants other constants still fills the cache a little
        }
        check(pm.save_cache(), "saving the pipeline cache");
        cache_path = pm.cache_path();
    }
    if (cache_path.empty() || !fs::exists(cache_path)) die("no pipeline cache was written");
    const std::string file = slurp(cache_path);
    seed("pipeline_cache", "lavapipe.zst", file);
    const std::vector<uint8_t> raw = vk::decompress_pipeline_cache(file);
    if (raw.empty()) die(cache_path + ": the pipeline cache written does not decompress");
    seed("pipeline_cache", "lavapipe.raw", std::string(raw.begin(), raw.end()));
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
        return 2;
    }
    g_out = argv[1];
    fs::create_directories(g_out);
    const std::string tmp = fuzz::scratch_dir();
    model_seeds(tmp);
    tokenizer_seeds();
    config_seeds();
    pipeline_cache_seeds(tmp + "/cache");
    std::printf("fuzz_seeds: wrote the seed corpora under %s\n", g_out.c_str());
    return 0;
}
