/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/synthesizers.h: the plugins' synthesizers (sdk/include/tandem/synth.h) as the CLI uses
// them: where a plugin's synthesizer file is, opening one, finding the one that writes an
// architecture through the plugin registry, asking it for a model. `tandem synth`, `tandem demo`
// and `tandem plugins` use it; the runtime library (libtandem) knows nothing of synthesizers.
//
//   auto s = TDM_TRY(find_synthesizer(*registry, "qwen3"));
//   std::string summary = TDM_TRY(s->synthesize("qwen3", "tiny.gguf", {{"type", "f16"}}));
#pragma once

#include <tandem/synth.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "plugin/registry.h"

namespace tdm::cli {

// Where the synthesizer of the plugin file `plugin_path` is: DIR/tandem-NAME.so ->
// DIR/synth/tandem-NAME-synth.so (TDM_SYNTH_SUBDIR, TDM_SYNTH_FILE_SUFFIX).
std::string synthesizer_path(const std::string& plugin_path);

// Options of a request: name without "--", value as text (synth.h, section 2), in order.
using SynthOptions = std::vector<std::pair<std::string, std::string>>;

// One opened synthesizer; closes the file when destroyed.
class Synthesizer {
public:
    // Opens the file (dlopen), negotiates the interface version and checks the table. Errors
    // name the file and the reason: dlopen's message, no entry point, the versions of both
    // sides, a table without its fields.
    static Result<std::unique_ptr<Synthesizer>> open(const std::string& path);
    ~Synthesizer();
    Synthesizer(const Synthesizer&) = delete;
    Synthesizer& operator=(const Synthesizer&) = delete;

    const std::string& path() const { return path_; }
    const std::string& name() const { return name_; }  // its table's name: the plugin's
    const std::string& description() const { return description_; }
    uint32_t version() const { return version_; }
    const std::vector<std::string>& archs() const { return archs_; }
    bool writes(std::string_view arch) const;

    // Writes one model: the synthesizer's one-line summary, or its message as the error.
    Result<std::string> synthesize(const std::string& arch, const std::string& output,
                                   const SynthOptions& options) const;

private:
    Synthesizer() = default;
    std::string path_, name_, description_;
    uint32_t version_ = 0;
    std::vector<std::string> archs_;
    void* handle_ = nullptr;  // dlopen handle
    tdm_status (*synthesize_)(const tdm_synth_request*, char*, size_t) = nullptr;
};

// The synthesizer that writes `arch` (a GGUF general.architecture name), found through the
// registry: the loaded plugin that registers arch as a model architecture, or else as the file
// architecture of a draft head (draft_head_desc.source_archs: "gemma4-assistant"), then that
// plugin's synthesizer file. Errors: no loaded plugin registers arch (listing the architectures
// the loaded plugins' synthesizers write); its plugin has no synthesizer (naming the plugin and
// the file looked for); the synthesizer does not open or does not list arch.
Result<std::unique_ptr<Synthesizer>> find_synthesizer(const Registry& reg, std::string_view arch);

}  // namespace tdm::cli
