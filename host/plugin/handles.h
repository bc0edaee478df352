/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/handles.h: the host-side definitions of the ABI's opaque handles.
// Plugins only ever see pointers to these.
#pragma once

#include <tandem/ext/encoder.h>
#include <tandem/ext/host_rows.h>
#include <tandem/ext/target_weights.h>
#include <tandem/ext/weight_transforms.h>
#include <tandem/tandem.h>

#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "formats/model_source.h"
#include "graph/graph.h"
#include "model/weight_store.h"
#include "plugin/target_features_ext.h"

struct tdm_model_source {
    const tdm::ModelSource* src = nullptr;
    // Strings handed to the plugin (meta_get_string), one per key: asking again
    // returns the same storage, so memory is bounded by the file's keys.
    mutable std::mutex strings_mutex;
    mutable std::map<std::string, std::string, std::less<>> strings;
};

struct tdm_loader {
    tdm::WeightStore* store = nullptr;
    const tdm::ModelSource* src = nullptr;
    const tdm::WeightStore* target = nullptr;  // a draft head's target's weights (target_weight)
};

struct tdm_options {
    std::map<std::string, std::string> values;
};

// The graph a plugin builds, with the batch inputs and outputs the host wires up.
struct tdm_graph {
    tdm::Graph graph;
    tdm_batch_desc batch{};
    tdm::TensorId tokens = tdm::kNoTensor, positions = tdm::kNoTensor, seq_ids = tdm::kNoTensor;
    tdm::TensorId positions4 = tdm::kNoTensor, output_rows = tdm::kNoTensor, target_hidden = tdm::kNoTensor;
    tdm::TensorId state_io = tdm::kNoTensor;  // I32 [state_io_entries(n)] when the model has recurrent states
    uint32_t n_embd_target = 0;  // width of TDM_INPUT_TARGET_HIDDEN (draft heads)
    std::vector<const tdm::KvLayerBinding*> kv;         // the model's own layers
    std::vector<const tdm::KvLayerBinding*> target_kv;  // draft heads: readable target layers
    std::vector<const tdm::StateBinding*> states;       // the model's recurrent states
    tdm::TensorId outputs[5] = {};                      // by tdm_graph_output
    // tdm.host_rows inputs: F32 [cols, n] rows of a host table, filled before each run
    std::vector<std::pair<tdm::TensorId, const tdm::DeviceWeight*>> host_rows;
    uint32_t plugin_abi = TDM_ABI_VERSION;  // of the plugin building it (ABI 1 gets ABI 1's statuses)
    uint32_t plugin_abi_minor = TDM_ABI_MINOR_VERSION;  // its minor: ops of later minors are refused

    // tdm.encoder. A target batch that carries image rows: the plugin's inject_rows
    // creates rows F32 [n_embd, n] and keep F32 [1, n], which the host fills.
    bool image_rows = false;
    tdm::TensorId inject_rows = tdm::kNoTensor, inject_keep = tdm::kNoTensor;
    // An encoder graph (is_encoder): its inputs, created on first request, and its result.
    bool is_encoder = false;
    tdm_encoder_batch encoder_batch{};
    uint32_t patch_values = 0, encoder_width = 0;  // values per patch; width of the rows
    tdm::TensorId patches = tdm::kNoTensor, patch_positions = tdm::kNoTensor, patch_ranges = tdm::kNoTensor;
    tdm::TensorId encoder_rows = tdm::kNoTensor;

    // tdm.target_features: the taps a target graph hands over, or a head's step reads.
    tdm::GraphTaps taps;
};

namespace tdm {

struct PluginRecord;

// A weight handle is the DeviceWeight itself.
inline const tdm_weight* to_handle(const DeviceWeight* w) { return reinterpret_cast<const tdm_weight*>(w); }
inline const DeviceWeight* from_handle(const tdm_weight* w) { return reinterpret_cast<const DeviceWeight*>(w); }

// The host API table for a plugin that negotiated ABI `abi` and minor `minor`
// (0 below ABI 3): its abi_version and abi_minor are that version's, and its
// query_op refuses ops of a later minor. Its struct_size is ABI 1's for an ABI 1
// plugin and the whole table's otherwise: what a later version appended lies past
// the end of the plugin's header, which never names it.
const tdm_host_api* host_api(uint32_t abi = TDM_ABI_VERSION, uint32_t minor = TDM_ABI_MINOR_VERSION);
// The table for a loaded plugin: its negotiated version and minor.
const tdm_host_api* host_api(const PluginRecord& plugin);
// Extension "tdm.target_weights" (tandem/ext/target_weights.h).
const tdm_ext_target_weights* target_weights_extension();
// Extension "tdm.host_rows" (tandem/ext/host_rows.h).
const tdm_ext_host_rows* host_rows_extension();
// Extension "tdm.encoder" (tandem/ext/encoder.h; plugin/encoder_ext.cpp).
const tdm_ext_encoder* encoder_extension();
// Extension "tdm.weight_transforms" (tandem/ext/weight_transforms.h; plugin/weight_transforms_ext.cpp).
const tdm_ext_weight_transforms* weight_transforms_extension();

// Loads a plugin's weight request with `load` (WeightStore::load or a variant of it) after
// copying its names within bounds, and answers as load_weight does: *out, or a status (the
// store's error code, else one read from its message) with last_error() set.
using StoreLoad =
    std::function<Result<const DeviceWeight*>(WeightStore&, const ModelSource&, const tdm_weight_request&)>;
tdm_status load_plugin_weight(tdm_loader* loader, const tdm_weight_request* req, const tdm_weight** out,
                              const StoreLoad& load);

// Sets the calling thread's last error (read by tdm_host_api.last_error).
tdm_status set_last_error(tdm_status st, std::string message);
// The same for a host error: its code (tdm_status), or TDM_ERR_INVALID_ARGUMENT
// when it carries none.
tdm_status set_last_error(const Error& e);

// Prepares a graph for a batch: creates the token/position/sequence/output-row
// inputs, and the state_io input when the model has recurrent states.
void init_graph_inputs(tdm_graph& g, const tdm_batch_desc& batch, bool has_states);

}  // namespace tdm
