/* SPDX-License-Identifier: Apache-2.0 */
// host/model/model.h: a model loaded through its architecture plugin.
//
// load() opens the file (GGUF, or an HF directory), finds the plugin that
// claims its architecture, lets the plugin parse hyper-parameters and declare
// its memory (create), loads the tokenizer, and has the plugin request every
// weight (load). build_graph() asks the plugin for the forward pass of one
// batch shape. Not here: KV memory (kv_pool.h), running graphs (engine/).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "formats/model_source.h"
#include "model/weight_store.h"
#include "plugin/handles.h"
#include "plugin/registry.h"
#include "tokenizer/tokenizer.h"

namespace tdm {

struct ModelLoadOptions {
    std::map<std::string, std::string> options;  // passed to the plugin (tdm_options)
    std::function<void(uint64_t done, uint64_t total)> progress;  // bytes of the file loaded
    WeightUploadOptions upload;                                    // tests: force chunking
    bool check_weights = true;  // refuse NaN/Inf weights (model/weight_check.h)
    // Tables a plugin reads only by token rows (tdm.host_rows): in host memory always (on),
    // never (off), or (automatic) on a CPU device, whose memory is host memory anyway, and
    // on a GPU when a table is at least host_rows_share of its device-local memory.
    WeightStore::HostTables host_rows = WeightStore::HostTables::automatic;
    double host_rows_share = 0.1;
    // Matmuls of Q8_0 weights with int8 activations (Graph::set_int8_matmul).
    bool int8_matmul = false;
};

class Model {
public:
    // `source` may be shared with another model (a draft head reading the same file).
    static Result<std::unique_ptr<Model>> load(std::shared_ptr<const ModelSource> source, const Registry& registry,
                                               vk::Device& device, const ModelLoadOptions& opt = {});
    static Result<std::unique_ptr<Model>> load(const std::string& path, const Registry& registry, vk::Device& device,
                                               const ModelLoadOptions& opt = {});
    ~Model();
    Model(const Model&) = delete;
    Model& operator=(const Model&) = delete;

    const ArchEntry& arch() const { return *arch_; }
    const tdm_model_info& info() const { return info_; }
    std::span<const tdm_attention_layer> attention_layers() const {
        return {info_.attention_layers, info_.n_attention_layers};
    }
    std::span<const tdm_recurrent_state> recurrent_states() const {
        return {info_.recurrent_states, info_.n_recurrent_states};
    }
    // Whether a batch may hold rows of several sequences (TDM_MODEL_BATCHED_STATES;
    // always for a model without recurrent states).
    bool batches_sequences() const {
        return info_.n_recurrent_states == 0 || (info_.flags & TDM_MODEL_BATCHED_STATES) != 0;
    }
    const ModelSource& source() const { return *source_; }
    std::shared_ptr<const ModelSource> shared_source() const { return source_; }
    // The tokenizer from the file (GGUF metadata or tokenizer.json beside HF
    // weights); nullopt when the file has none (--prompt-tokens still works).
    const Tokenizer* tokenizer() const { return tokenizer_ ? &*tokenizer_ : nullptr; }
    const std::string& tokenizer_error() const { return tokenizer_error_; }
    uint64_t weight_bytes() const { return weights_->device_bytes(); }
    const WeightStore& weight_store() const { return *weights_; }
    size_t weight_count() const { return weights_->count(); }
    void* plugin_model() const { return obj_; }
    // The states its forward can hand a draft head (tdm.target_features provide()).
    const ProvidedTaps& provided_taps() const { return provided_taps_; }

    // Builds the plugin's forward graph for one batch against the given KV
    // layers and recurrent states (one per declared layer / state). `taps`: the states
    // an attached head reads (tdm.target_features), recorded in the graph's taps.
    Result<std::unique_ptr<tdm_graph>> build_graph(const tdm_batch_desc& batch,
                                                   std::span<const KvLayerBinding* const> kv,
                                                   std::span<const StateBinding* const> states = {},
                                                   bool image_rows = false,
                                                   std::span<const tdm_feature_tap> taps = {}) const;

private:
    Model() = default;
    std::shared_ptr<const ModelSource> source_;
    const ArchEntry* arch_ = nullptr;
    tdm_model_source src_handle_;
    tdm_options options_;
    tdm_model_info info_{};
    ProvidedTaps provided_taps_;
    std::vector<tdm_attention_layer> attention_layers_;  // info_.attention_layers points here
    std::vector<tdm_recurrent_state> recurrent_states_;
    void* obj_ = nullptr;
    std::unique_ptr<WeightStore> weights_;
    std::optional<Tokenizer> tokenizer_;
    std::string tokenizer_error_;
    bool int8_matmul_ = false;
};

// Finds the architecture entry for a source; the error lists the loaded plugins
// and what they accept.
Result<const ArchEntry*> find_architecture(const ModelSource& src, const Registry& registry);

// What `tandem info` shows without loading weights: the plugin parses the
// hyper-parameters and declares memory; nothing touches the device.
struct ArchProbe {
    const ArchEntry* arch = nullptr;
    uint32_t n_vocab = 0, n_embd = 0, n_ctx_train = 0;
    std::vector<tdm_attention_layer> attention_layers;
    std::vector<tdm_recurrent_state> recurrent_states;
    std::string description;
};
Result<ArchProbe> probe_architecture(const ModelSource& src, const Registry& registry);

}  // namespace tdm
