/* SPDX-License-Identifier: Apache-2.0 */
// host/cli/commands.h: the `tandem` CLI: its spec (cli_spec.cpp), the shared
// setup of a command (app.cpp: config, logging, device, plugins, model), and
// one function per subcommand (cmd_*.cpp). main() only calls run_cli().
#pragma once

#include <cstdio>
#include <memory>
#include <string>

#include "cli/args.h"
#include "cli/profile_json.h"
#include "config/config.h"
#include "model/runner.h"
#include "model/model.h"
#include "plugin/plugin_loader.h"
#include "plugin/registry.h"
#include "serve/make_drafters.h"

namespace tdm::cli {

const ProgramSpec& program_spec();

// Exit status: 0 success, 1 failure (error printed), 2 usage error, 130 stopped
// by Ctrl-C (what was generated is printed).
int run_cli(int argc, const char* const* argv);

// What most commands need, created on demand. Also what building drafters needs
// (serve/make_drafters.h), so that the commands build their chains there.
class App final : public DrafterHost {
public:
    App(const ParsedArgs& args, Config config) : args_(args), config_(std::move(config)) {}
    const ParsedArgs& args() const { return args_; }
    const Config& config() const override { return config_; }
    Config& config() { return config_; }

    Result<vk::Device*> device() override;
    Result<vk::PipelineManager*> pipelines() override;
    Result<Registry*> registry() override;
    // Loads a model with a progress line on a terminal.
    Result<std::unique_ptr<Model>> load_model(const std::string& path) override;
    // A KV pool sized from the config (n_ctx, kv_memory, kv_type) for a model.
    // speculative: room for verify passes of --draft-max + 1 tokens (recurrent-state
    // checkpoints); plain decoding keeps two.
    Result<std::unique_ptr<KvPool>> make_kv(const Model& model, bool speculative, uint32_t n_seq = 1) override;
    // Prints the profile table if --profile was on; ends --profile-json's file.
    void finish();
    // --profile-json: every profiled run from now on goes to `writer` as well.
    void write_profiles_to(std::unique_ptr<ProfileJsonWriter> writer);
    // A command that succeeded but must not exit with 0 (130: stopped by SIGINT).
    void set_exit_code(int code) { exit_code_ = code; }
    int exit_code() const { return exit_code_; }

private:
    const ParsedArgs& args_;
    Config config_;
    std::shared_ptr<ProfileJsonWriter> profile_json_;  // --profile-json's file, shared with the sink
    bool profile_table_ = false;  // the per-op table was asked for (--profile, TANDEM_PROFILE, config)
    std::unique_ptr<vk::Device> device_;
    std::unique_ptr<vk::PipelineManager> pipelines_;
    std::unique_ptr<Registry> registry_;
    int exit_code_ = 0;
};

// The KV pool make_kv creates for a model of this trained length (also used to plan memory
// before the model is loaded).
KvPoolConfig kv_config(const Config& config, uint32_t n_ctx_train, bool speculative, uint32_t n_seq = 1);
// A speculative pool wants a checkpoint per row of the longest verify, which for many
// sequences of a hybrid model can be more than one binding of `max_binding` bytes holds
// (Qwen3.5-0.8B at 8 streams on lavapipe: 144 of 128 MiB). Fewer checkpoints only shorten
// the drafts (BatchEngine::decide_k caps them at n_checkpoints - 2), so `kc` keeps what fits,
// if that leaves a draft. make_kv and the memory plan both size the pool this way.
void fit_checkpoints(KvPoolConfig& kc, std::span<const tdm_recurrent_state> states, bool speculative,
                     uint64_t max_binding);

// Reads the config file (--config or the default search) and applies the
// command-line options on top.
Result<Config> merged_config(const ParsedArgs& args);

Status cmd_run(App& app);
Status cmd_ocr(App& app);
Status cmd_chat(App& app);
Status cmd_serve(App& app);
Status cmd_info(App& app);
Status cmd_tokenize(App& app);
Status cmd_plugins(App& app);
Status cmd_devices(App& app);
Status cmd_synth(App& app);
Status cmd_demo(App& app);
Status cmd_bench(App& app);
Status cmd_tune(App& app);
// On a GPU, unless --no-tune: times the work splits of the model's matmul shapes that the
// device's table lacks (cmd_tune.cpp). A failure only costs speed: it is logged.
Status tune_model_at_first_load(App& app, const Model& model);
// The hidden `tandem __scan-plugin PATH` (plugin/plugin_scan.h): exit status, report on stdout.
int cmd_scan_plugin(int argc, const char* const* argv);
// Where and how the commands look for plugins: the config's directories and
// disabled names, and out-of-process scanning unless --no-plugin-scan.
Result<PluginSearch> plugin_search(const App& app);

// Helpers shared by commands.
bool json_output(const ParsedArgs& args);  // --output-format json / --json
std::string human_bytes(uint64_t n);

}  // namespace tdm::cli
