/* SPDX-License-Identifier: Apache-2.0 */
// host/plugin/registry.h: what the loaded plugins provide, and lookups by the
// names users and files use (GGUF general.architecture, HF model_type,
// --spec-type). Not here: finding and opening plugin files (plugin_loader.h).
//
// A plugin scanned out of process (plugin_scan.h) is deferred: its record shows
// what the scan found, and the first lookup that needs one of its names opens it
// in this process (set_opener). Lookups are therefore logically const only; a
// registry with deferred plugins is for one thread at a time.
#pragma once

#include <tandem/ext/drafter_branches.h>
#include <tandem/ext/encoder.h>
#include <tandem/tandem.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/error.h"
#include "ops/custom_op.h"

namespace tdm {

struct PluginRecord;

// Entries hold the host's own copy of each descriptor (read by the ABI's
// growth rules: fields a plugin's older header lacks are zero); its name and
// name lists point at the host's bounded copies, never into the plugin.
struct ArchEntry {
    std::shared_ptr<const tdm_arch_desc> owned;
    const tdm_arch_desc* desc = nullptr;
    const PluginRecord* plugin = nullptr;
    std::vector<std::string> gguf_names, hf_model_types;
};

struct DraftHeadEntry {
    std::shared_ptr<const tdm_draft_head_desc> owned;
    const tdm_draft_head_desc* desc = nullptr;
    const PluginRecord* plugin = nullptr;
    std::vector<std::string> spec_types, target_archs;
    std::vector<std::string> source_archs;  // architectures of files holding this head alone
};

// Whether a target file of `target_arch` may carry `h` (the heads --spec-auto and chat try):
// one of its targets, and not a head that lives in a file of its own (source_archs).
inline bool carried_by(const DraftHeadEntry& h, std::string_view target_arch) {
    return h.source_archs.empty() &&
           std::find(h.target_archs.begin(), h.target_archs.end(), target_arch) != h.target_archs.end();
}

// An encoder (tdm.encoder): turns images into embedding rows of its target architectures.
struct EncoderEntry {
    std::shared_ptr<const tdm_encoder_desc> owned;
    const tdm_encoder_desc* desc = nullptr;
    const PluginRecord* plugin = nullptr;
    std::vector<std::string> target_archs;
};

struct DrafterEntry {
    std::shared_ptr<const tdm_drafter_desc> owned;
    const tdm_drafter_desc* desc = nullptr;
    const PluginRecord* plugin = nullptr;
    std::vector<std::string> spec_types;
    // tdm.drafter_branches: the drafter also proposes branches (null: chains only).
    tdm_propose_branches_fn propose_branches = nullptr;
};

// The names a plugin registers, as a scan reported them: what lookups match
// before the plugin is opened in this process.
struct ScannedNames {
    std::vector<std::string> gguf_archs, hf_model_types, drafter_types, head_types;
    std::vector<std::string> head_source_archs;  // architectures of files that hold a head alone
    std::vector<std::string> encoder_targets;    // architectures its encoders feed
};

struct PluginRecord {
    std::string name, version, description, path;
    uint32_t abi = 0;                   // the negotiated ABI version
    uint32_t abi_minor = 0;             // its minor in force (tandem.h §1; 0 below ABI 3)
    void* handle = nullptr;             // dlopen handle
    tdm_plugin_api api{};               // the host's copy (zero when the plugin failed before init)
    std::string error;                  // non-empty: failed to load/init (kept for `tandem plugins`)
    std::vector<std::string> provides;  // "arch qwen3", "drafter ngram-simple", ...
    std::vector<std::unique_ptr<CustomOp>> custom_ops;  // created during init (tdm.custom_op); live until unload
    // Scanned out of process, not opened here yet (handle null, error empty).
    bool deferred = false;
    ScannedNames scanned;
    // How this record was vetted: "in-process" (no scan), "scanned" (a child ran
    // it now) or "cached" (an earlier scan of the same file); and the scanner's
    // report (null when not scanned).
    std::string scan_origin = "in-process";
    std::shared_ptr<const nlohmann::json> scan_report;  // by pointer: this header needs only json_fwd
};

class Registry {
public:
    Registry() = default;
    ~Registry();  // shuts plugins down and unloads them
    Registry(const Registry&) = delete;
    Registry& operator=(const Registry&) = delete;

    // Lookups; nullptr if nothing matches.
    const ArchEntry* find_arch_gguf(std::string_view general_architecture) const;
    const ArchEntry* find_arch_hf(std::string_view model_type) const;
    const DrafterEntry* find_drafter(std::string_view spec_type) const;
    const DraftHeadEntry* find_draft_head(std::string_view spec_type, std::string_view target_arch) const;
    // The head whose own files have architecture `source_arch` (GGUF general.architecture
    // or HF model_type) and that drafts for `target_arch`, e.g. gemma4-assistant for gemma4.
    const DraftHeadEntry* find_draft_head_source(std::string_view source_arch, std::string_view target_arch) const;
    // The first head whose own files have architecture `source_arch`, whatever its targets.
    const DraftHeadEntry* find_draft_head_source(std::string_view source_arch) const;
    bool is_draft_head_source(std::string_view source_arch) const;
    // The same over every name a file goes by (ModelSource::architecture_names()), first first.
    const DraftHeadEntry* find_draft_head_source(std::span<const std::string> source_names,
                                                 std::string_view target_arch) const;
    // The encoder that feeds models of architecture `target_arch` (tdm_arch_desc.name).
    const EncoderEntry* find_encoder(std::string_view target_arch) const;

    // "qwen-nextn (qwen3, qwen35 / HF: qwen3, qwen3_5); ngram (no architectures)"
    std::string describe_architectures() const;
    std::vector<std::string> spec_types() const;  // every --spec-type a plugin answers to

    // Every record, deferred ones included; opens nothing.
    const std::vector<std::unique_ptr<PluginRecord>>& plugins() const { return plugins_; }
    // Every entry of its kind: opens the deferred plugins that register one.
    // Entries never move once added (a deque), so pointers from lookups stay valid.
    const std::deque<ArchEntry>& archs() const;
    const std::deque<DraftHeadEntry>& draft_heads() const;
    const std::deque<DrafterEntry>& drafters() const;
    const std::deque<EncoderEntry>& encoders() const;

    // Opens a deferred plugin in this process (the loader sets it); its error
    // is kept on the record and the lookup goes on without it.
    using Opener = std::function<Status(Registry&, PluginRecord&)>;
    void set_opener(Opener opener) { opener_ = std::move(opener); }

    // Used by the loader and the host API during init.
    PluginRecord* add_plugin(std::unique_ptr<PluginRecord> p);
    Status add_arch(const PluginRecord* p, const tdm_arch_desc* d);
    Status add_draft_head(const PluginRecord* p, const tdm_draft_head_desc* d);
    Status add_drafter(const PluginRecord* p, const tdm_drafter_desc* d);
    // tdm.drafter_branches: plugin p's drafter named `name` proposes branches with fn.
    Status set_propose_branches(const PluginRecord* p, std::string_view name, tdm_propose_branches_fn fn);
    Status add_encoder(const PluginRecord* p, const tdm_encoder_desc* d);
    // Drops what a plugin registered (its init failed).
    void remove_entries(const PluginRecord* p);

private:
    // Opens the deferred plugins `wanted` picks, in search order.
    void open_deferred(const std::function<bool(const ScannedNames&)>& wanted) const;
    const ArchEntry* loaded_arch_gguf(std::string_view n) const;
    const DrafterEntry* loaded_drafter(std::string_view t) const;

    std::vector<std::unique_ptr<PluginRecord>> plugins_;
    std::deque<ArchEntry> archs_;
    std::deque<DraftHeadEntry> heads_;
    std::deque<DrafterEntry> drafters_;
    std::deque<EncoderEntry> encoders_;
    Opener opener_;
};

// The registration context handed to tdm_plugin_api.init.
}  // namespace tdm

struct tdm_registry {
    tdm::Registry* registry;
    tdm::PluginRecord* plugin;
};
