// SPDX-License-Identifier: Apache-2.0
// host/model/model.cpp
#include "model/model.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

#include "common/file_read.h"
#include "common/log.h"
#include "plugin/abi_structs.h"
#include "tokenizer/vocab_gguf.h"
#include "tokenizer/vocab_json.h"

namespace tdm {

namespace {

// The size from which an automatic placement keeps a token table in host memory.
uint64_t host_table_threshold(const vk::DeviceCaps& caps, double share) {
    if (caps.is_cpu()) return 0;  // device memory is host memory: a copy only adds to it
    uint64_t heap = 0;
    for (const vk::MemoryHeapInfo& h : caps.heaps)
        if (h.device_local) heap = std::max(heap, h.size);
    return heap ? uint64_t(double(heap) * std::clamp(share, 0.0, 1.0)) : 0;
}

// Why a Hugging Face model names no architecture: its config.json is missing, is not JSON
// (the parser's message gives the position), or has no string "model_type".
Error hf_architecture_error(const ModelSource& src) {
    const SafetensorsModel* st = src.safetensors();
    if (!st) return Error::format("{}: the model does not name its architecture", src.path());
    auto cfg = st->config();
    if (!cfg.ok())
        return Error::format("{}: cannot tell the architecture: {}", src.path(), cfg.error().message());
    const nlohmann::json& j = **cfg;
    auto mt = j.find("model_type");
    if (mt == j.end())
        return Error::format("{}: the model does not name its architecture: {} has no \"model_type\"", src.path(),
                             st->config_path());
    return Error::format("{}: the model does not name its architecture: \"model_type\" in {} is {}, not a "
                         "non-empty string",
                         src.path(), st->config_path(), mt->dump());
}

// The ids an HF checkpoint stops on besides its tokenizer's eos: "eos_token_id" (a number or a
// list) of config.json, at the top or in text_config (multimodal wrappers), and of
// generation_config.json, which transformers' generate() reads. GLM-OCR lists <|user|> there;
// llama.cpp's converter writes it as the GGUF's eot. Unreadable files add nothing.
std::vector<int32_t> hf_stop_ids(const ModelSource& src, const std::filesystem::path& dir) {
    std::vector<int32_t> ids;
    auto collect = [&](const nlohmann::json& j) {
        for (const char* scope : {"", "text_config"}) {
            const nlohmann::json* o = &j;
            if (*scope) {
                auto it = j.find(scope);
                if (it == j.end() || !it->is_object()) continue;
                o = &*it;
            }
            auto e = o->find("eos_token_id");
            if (e == o->end()) continue;
            if (e->is_number_integer()) ids.push_back(e->get<int32_t>());
            if (e->is_array())
                for (const nlohmann::json& v : *e)
                    if (v.is_number_integer()) ids.push_back(v.get<int32_t>());
        }
    };
    if (const nlohmann::json* cfg = src.hf_config()) collect(*cfg);
    const std::filesystem::path gen = dir / "generation_config.json";
    std::error_code ec;
    if (std::filesystem::is_regular_file(gen, ec)) {
        auto text = read_regular_file(gen.string(), 1 << 20, "generation config");
        if (text.ok()) {
            const nlohmann::json j = nlohmann::json::parse(*text, nullptr, false);
            if (j.is_object()) collect(j);
        }
    }
    return ids;
}

}  // namespace

Result<const ArchEntry*> find_architecture(const ModelSource& src, const Registry& registry) {
    const std::string arch = src.architecture();
    const bool gguf = src.format() == SourceFormat::gguf;
    // a head's HF directory may say model_type "llama" (or nothing) and name itself only in
    // "architectures"
    for (const std::string& name : src.architecture_names())
        if (registry.is_draft_head_source(name))
            return Error::format("{}: '{}' is a drafter, not a model: pass it with -md (--model-draft) beside its "
                                 "target model (-m)",
                                 src.path(), name);
    if (arch.empty() && gguf)
        return Error::format("{}: the file does not name its architecture (no general.architecture)", src.path());
    if (arch.empty()) return hf_architecture_error(src);
    const ArchEntry* e = gguf ? registry.find_arch_gguf(arch) : registry.find_arch_hf(arch);
    if (!e)
        return Error::format("{}: unknown architecture '{}'; loaded plugins: {}", src.path(), arch,
                             registry.describe_architectures());
    return e;
}

Result<ArchProbe> probe_architecture(const ModelSource& src, const Registry& registry) {
    ArchProbe p;
    p.arch = TDM_TRY(find_architecture(src, registry));
    tdm_model_source h;
    h.src = &src;
    tdm_model_info info{};
    info.struct_size = sizeof info;
    void* obj = nullptr;
    char err[1024] = {0};
    if (p.arch->desc->create(host_api(*p.arch->plugin), &h, nullptr, &info, &obj, err, sizeof err) != TDM_OK || !obj)
        return Error::format("{}: {}", src.path(),
                             plugin_message(err, sizeof err, "the architecture plugin refused the model"));
    p.n_vocab = info.n_vocab;
    p.n_embd = info.n_embd;
    p.n_ctx_train = info.n_ctx_train;
    const uint32_t abi = p.arch->plugin->abi;
    auto layers = read_abi_array(info.attention_layers, info.n_attention_layers, abi,
                                 fmt::format("plugin {}: attention layers", p.arch->plugin->name));
    auto states = read_abi_array(info.recurrent_states, info.n_recurrent_states, abi,
                                 fmt::format("plugin {}: recurrent states", p.arch->plugin->name));
    if (info.description) p.description = plugin_string(info.description, kPluginTextMax);
    p.arch->desc->destroy(obj);
    p.attention_layers = TDM_TRY(std::move(layers));
    p.recurrent_states = TDM_TRY(std::move(states));
    return p;
}

Result<std::unique_ptr<Model>> Model::load(const std::string& path, const Registry& registry, vk::Device& device,
                                           const ModelLoadOptions& opt) {
    auto src = TDM_TRY(ModelSource::open(path));
    return load(std::shared_ptr<const ModelSource>(std::move(src)), registry, device, opt);
}

Result<std::unique_ptr<Model>> Model::load(std::shared_ptr<const ModelSource> source, const Registry& registry,
                                           vk::Device& device, const ModelLoadOptions& opt) {
    std::unique_ptr<Model> m(new Model());
    m->source_ = std::move(source);
    const ModelSource& src = *m->source_;
    m->arch_ = TDM_TRY(find_architecture(src, registry));
    m->src_handle_.src = m->source_.get();
    m->options_.values = opt.options;
    m->int8_matmul_ = opt.int8_matmul;

    char err[1024] = {0};
    m->info_.struct_size = sizeof(tdm_model_info);
    const tdm_arch_desc* d = m->arch_->desc;
    {
        TargetCreateScope taps(&m->info_);
        if (d->create(host_api(*m->arch_->plugin), &m->src_handle_, &m->options_, &m->info_, &m->obj_, err,
                      sizeof err) != TDM_OK ||
            !m->obj_)
            return Error::format("{}: {}", src.path(),
                                 plugin_message(err, sizeof err, "the architecture plugin refused the model"));
        m->provided_taps_ = taps.result;
    }
    if (m->info_.n_vocab == 0 || m->info_.n_embd == 0)
        return Error::format("{}: plugin {} reported an empty model (n_vocab {}, n_embd {})", src.path(),
                             m->arch_->plugin->name, m->info_.n_vocab, m->info_.n_embd);
    // The host's copies, read by the ABI's growth rules (elements strided by
    // the plugin's struct_size); info_ points at them from here on.
    const uint32_t abi = m->arch_->plugin->abi;
    m->attention_layers_ = TDM_TRY(read_abi_array(m->info_.attention_layers, m->info_.n_attention_layers, abi,
                                                  fmt::format("plugin {}: attention layers", m->arch_->plugin->name)));
    m->recurrent_states_ = TDM_TRY(read_abi_array(m->info_.recurrent_states, m->info_.n_recurrent_states, abi,
                                                  fmt::format("plugin {}: recurrent states", m->arch_->plugin->name)));
    m->info_.attention_layers = m->attention_layers_.data();
    m->info_.recurrent_states = m->recurrent_states_.data();

    // tokenizer: absent or broken is not fatal until text is needed
    if (const GgufFile* g = src.gguf()) {
        if (g->find("tokenizer.ggml.model")) {
            auto t = load_tokenizer_gguf(*g);
            if (t.ok()) m->tokenizer_ = std::move(t).value();
            else m->tokenizer_error_ = t.error().message();
        } else {
            m->tokenizer_error_ = fmt::format("{} has no tokenizer (no tokenizer.ggml.* keys)", src.path());
        }
    } else {
        std::filesystem::path dir = src.path();
        if (!std::filesystem::is_directory(dir)) dir = dir.parent_path();
        const auto tj = dir / "tokenizer.json";
        if (std::filesystem::exists(tj)) {
            auto t = load_tokenizer_hf_file(tj.string());
            if (t.ok()) {
                m->tokenizer_ = std::move(t).value();
                for (int32_t id : hf_stop_ids(src, dir)) m->tokenizer_->add_eog(id);
            } else {
                m->tokenizer_error_ = t.error().message();
            }
        } else {
            m->tokenizer_error_ = fmt::format("no tokenizer.json in {}", dir.string());
        }
    }
    if (!m->tokenizer_) TDM_LOG_INFO("model", "{}", m->tokenizer_error_);
    if (m->tokenizer_ && m->tokenizer_->n_vocab() > int32_t(m->info_.n_vocab))
        return Error::format("{}: the tokenizer has {} tokens but the model's vocabulary is {}", src.path(),
                             m->tokenizer_->n_vocab(), m->info_.n_vocab);

    // One allocation for a small model, 256 MiB blocks for a large one.
    const uint64_t block = std::clamp<uint64_t>(src.file_bytes() + (1u << 20), 1u << 20, 256ull << 20);
    m->weights_ = std::make_unique<WeightStore>(device, src.path(), block);
    m->weights_->set_upload_options(opt.upload);
    m->weights_->set_check_weights(opt.check_weights);
    m->weights_->set_host_tables(opt.host_rows, host_table_threshold(device.caps(), opt.host_rows_share));
    if (opt.progress) {
        const uint64_t total = src.file_bytes();
        auto fn = opt.progress;
        m->weights_->set_progress([fn, total](uint64_t done) { fn(done, total); });
    }
    tdm_loader loader{m->weights_.get(), &src};
    if (d->load(m->obj_, &loader, err, sizeof err) != TDM_OK)
        return Error::format("{}", plugin_message(err, sizeof err, "loading weights failed"));
    TDM_LOG_INFO("model", "{}: {} ({}), {} weights, {} in device memory, {} in host memory", src.path(), d->name,
                 m->arch_->plugin->name, m->weights_->count(), vk::format_bytes(m->weights_->device_bytes()),
                 vk::format_bytes(m->weights_->host_bytes()));
    return m;
}

Model::~Model() {
    if (obj_ && arch_) arch_->desc->destroy(obj_);
}

Result<std::unique_ptr<tdm_graph>> Model::build_graph(const tdm_batch_desc& batch,
                                                      std::span<const KvLayerBinding* const> kv,
                                                      std::span<const StateBinding* const> states,
                                                      bool image_rows,
                                                      std::span<const tdm_feature_tap> taps) const {
    if (kv.size() != info_.n_attention_layers)
        return Error::format("internal: {} KV layers for a model with {}", kv.size(), info_.n_attention_layers);
    if (states.size() != info_.n_recurrent_states)
        return Error::format("internal: {} recurrent states for a model with {}", states.size(),
                             info_.n_recurrent_states);
    auto g = std::make_unique<tdm_graph>();
    init_graph_inputs(*g, batch, !states.empty());
    g->plugin_abi = arch_->plugin->abi;
    g->plugin_abi_minor = arch_->plugin->abi_minor;
    g->kv.assign(kv.begin(), kv.end());
    g->states.assign(states.begin(), states.end());
    g->graph.set_int8_matmul(int8_matmul_);
    g->image_rows = image_rows;
    g->taps.provided = provided_taps_.provided;
    g->taps.n_layers = provided_taps_.n_layers;
    g->taps.width = info_.n_embd;
    g->taps.wanted.assign(taps.begin(), taps.end());
    g->taps.values.assign(taps.size(), kNoTensor);
    char err[1024] = {0};
    if (arch_->desc->build_graph(obj_, g.get(), &batch, err, sizeof err) != TDM_OK)
        return Error::format("building the {} graph for {} tokens: {}", arch_->desc->name, batch.n_tokens,
                             plugin_message(err, sizeof err, "failed"));
    const TensorId logits = g->outputs[TDM_OUTPUT_LOGITS];
    if (!logits) return Error::format("plugin {}: the graph sets no logits output", arch_->plugin->name);
    const Tensor& t = g->graph.tensor(logits);
    if (t.type != DType::F32 || t.cols() != int64_t(info_.n_vocab) || t.rows() != int64_t(batch.n_outputs))
        return Error::format("plugin {}: logits are {}, expected [{}, {}]", arch_->plugin->name, g->graph.describe(logits),
                             info_.n_vocab, batch.n_outputs);
    return g;
}

}  // namespace tdm
