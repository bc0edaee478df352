// SPDX-License-Identifier: Apache-2.0
// host/cli/app.cpp: config merging and the lazily created device, plugins and
// models shared by the commands; run_cli() dispatches and turns errors into
// exit codes (never a crash, never exit() from library code).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "cli/cpu_device_threads.h"
#include "cli/option_checks.h"
#include "cli/version.h"
#include "common/log.h"
#include "config/memory_size.h"
#include "plugin/plugin_loader.h"
#include "plugin/plugin_scan.h"
#include "vk/recorder.h"

namespace tdm::cli {

bool json_output(const ParsedArgs& args) {
    if (args.flag("json")) return true;
    auto f = args.get_string("output-format");
    return f && *f == "json";
}

std::string human_bytes(uint64_t n) { return vk::format_bytes(n); }

Result<Config> merged_config(const ParsedArgs& a) {
    TDM_TRY(check_option_conflicts(a));
    Config c = TDM_TRY(load_config(a.get_string("config")));
    auto cl = [&](std::string_view id) { return a.origin(id) == Origin::command_line || a.origin(id) == Origin::environment; };
    // device
    if (cl("device")) c.device.select = *a.get_string("device");
    if (cl("validate")) c.device.validate = true;
    if (cl("profile")) c.device.profile = true;
    if (cl("no-tune")) c.device.tune = false;
    if (cl("memory-limit")) c.device.memory_limit = TDM_TRY_CTX(parse_memory_size(*a.get_string("memory-limit")), "--memory-limit");
    for (const auto& p : a.get_strings("plugin-path")) c.plugins.paths.insert(c.plugins.paths.begin(), p);
    for (const auto& p : a.get_strings("plugin-disable")) c.plugins.disable.push_back(p);
    if (cl("log-level")) c.log.level = *a.get_string("log-level");
    // model
    if (cl("model")) c.model.path = *a.get_string("model");
    if (cl("ctx-size")) {
        c.model.n_ctx = int(*a.get_int("ctx-size"));
        c.model.kv_memory = 0;  // the command line wins over a file's budget
    }
    if (cl("kv-memory")) c.model.kv_memory = TDM_TRY_CTX(parse_memory_size(*a.get_string("kv-memory")), "--kv-memory");
    if (cl("kv-type")) c.model.kv_type = *a.get_string("kv-type");
    if (cl("batch-size")) c.model.n_batch = int(*a.get_int("batch-size"));
    if (cl("chat")) c.model.chat = true;
    if (cl("no-chat")) c.model.chat = false;
    if (cl("chat-template")) c.model.chat_template = *a.get_string("chat-template");
    if (cl("no-check-weights")) c.model.check_weights = false;
    if (a.knows("no-warmup") && cl("no-warmup")) c.model.warmup = false;
    if (cl("host-rows")) c.model.host_rows = *a.get_string("host-rows");
    if (cl("host-rows-share")) c.model.host_rows_share = float(*a.get_number("host-rows-share"));
    if (cl("int8-matmul")) c.model.int8_matmul = *a.get_string("int8-matmul");
    if (cl("model-draft")) c.model.draft_path = *a.get_string("model-draft");
    if (cl("mtp-head")) c.model.mtp_head_path = *a.get_string("mtp-head");
    if (a.knows("mmproj") && cl("mmproj")) c.model.mmproj_path = *a.get_string("mmproj");
    // sampling
    if (cl("temp")) c.sampling.temperature = float(*a.get_number("temp"));
    if (cl("top-k")) c.sampling.top_k = int(*a.get_int("top-k"));
    if (cl("top-p")) c.sampling.top_p = float(*a.get_number("top-p"));
    if (cl("min-p")) c.sampling.min_p = float(*a.get_number("min-p"));
    if (cl("repeat-penalty")) c.sampling.repeat_penalty = float(*a.get_number("repeat-penalty"));
    if (cl("repeat-last-n")) c.sampling.repeat_last_n = int(*a.get_int("repeat-last-n"));
    if (cl("presence-penalty")) c.sampling.presence_penalty = float(*a.get_number("presence-penalty"));
    if (cl("frequency-penalty")) c.sampling.frequency_penalty = float(*a.get_number("frequency-penalty"));
    if (cl("logit-bias")) c.sampling.logit_bias = a.get_strings("logit-bias");
    if (cl("seed")) c.sampling.seed = *a.get_int("seed");
    // speculative
    if (cl("spec-type")) {
        c.speculative.type.clear();
        std::string s = *a.get_string("spec-type"), cur;
        for (char ch : s + ",") {
            if (ch == ',') {
                if (!cur.empty()) c.speculative.type.push_back(cur);
                cur.clear();
            } else if (ch != ' ') {
                cur += ch;
            }
        }
    }
    if (cl("draft-max")) c.speculative.draft_max = int(*a.get_int("draft-max"));
    if (cl("draft-min")) c.speculative.draft_min = int(*a.get_int("draft-min"));
    if (cl("spec-skip-streak")) c.speculative.skip_streak = int(*a.get_int("spec-skip-streak"));
    if (cl("spec-auto")) c.speculative.auto_select = true;
    if (cl("spec-fixed")) c.speculative.fixed = true;
    if (cl("spec-trace")) c.speculative.trace = *a.get_string("spec-trace");
    if (cl("mtp-hidden")) c.speculative.mtp_hidden = *a.get_string("mtp-hidden");
    // `tandem synth --draft-vocab N` sizes an EAGLE-3 head's vocabulary; it is no run setting
    if (a.command() != "synth" && cl("draft-vocab")) c.speculative.draft_vocab = *a.get_string("draft-vocab");
    if (cl("draft-tree")) c.speculative.draft_tree = *a.get_string("draft-tree");
    if (cl("spec-ngram-size-n")) c.speculative.ngram_size_n = int(*a.get_int("spec-ngram-size-n"));
    if (cl("spec-ngram-size-m")) c.speculative.ngram_size_m = int(*a.get_int("spec-ngram-size-m"));
    if (cl("spec-ngram-min-hits")) c.speculative.ngram_min_hits = int(*a.get_int("spec-ngram-min-hits"));
    if (cl("lookup-cache-static")) c.speculative.ngram_cache = *a.get_string("lookup-cache-static");
    // server (`tandem serve` only knows these options)
    auto server_cl = [&](std::string_view id) { return a.knows(id) && cl(id); };
    if (server_cl("host")) c.server.host = *a.get_string("host");
    if (server_cl("port")) c.server.port = int(*a.get_int("port"));
    if (server_cl("api-key")) c.server.api_key = *a.get_string("api-key");
    if (server_cl("alias")) c.server.alias = *a.get_string("alias");
    if (server_cl("parallel")) c.server.parallel = int(*a.get_int("parallel"));
    if (server_cl("queue")) c.server.queue = int(*a.get_int("queue"));
    if (server_cl("timeout")) c.server.timeout = int(*a.get_int("timeout"));
    if (server_cl("request-timeout")) c.server.request_timeout = int(*a.get_int("request-timeout"));
    if (server_cl("max-body")) c.server.max_body = *a.get_int("max-body");
    if (server_cl("shutdown-timeout")) c.server.shutdown_timeout = int(*a.get_int("shutdown-timeout"));
    if (server_cl("max-connections")) c.server.max_connections = int(*a.get_int("max-connections"));
    if (server_cl("max-connections-per-client"))
        c.server.max_connections_per_client = int(*a.get_int("max-connections-per-client"));
    if (server_cl("max-images")) c.server.max_images = int(*a.get_int("max-images"));
    if (server_cl("max-image-bytes")) c.server.max_image_bytes = *a.get_int("max-image-bytes");
    // ocr
    if (a.command() == "ocr") {
        if (cl("task")) c.ocr.task = *a.get_string("task");
        if (cl("schema")) c.ocr.schema = *a.get_string("schema");
        if (cl("output-format")) c.ocr.output_format = *a.get_string("output-format");
        if (cl("pdf-dpi")) c.ocr.pdf_dpi = float(*a.get_number("pdf-dpi"));
    }
    // serve renders the PDF pages of file parts as ocr does
    if (a.command() == "serve" && cl("pdf-dpi")) c.ocr.pdf_dpi = float(*a.get_number("pdf-dpi"));
    if (Status st = validate_config(c); !st.ok())
        return Error(name_command_line_options(st.error().message(), a));
    TDM_TRY(check_plugin_dirs(a, c));
    return c;
}

Result<vk::Device*> App::device() {
    if (device_) return device_.get();
    vk::Device::Options o;
    o.select = config_.device.select;
    o.validate = config_.device.validate;
    o.profile = config_.device.profile;
    o.memory_limit = config_.device.memory_limit;
    device_ = TDM_TRY(vk::Device::create(o));
    return device_.get();
}

Result<vk::PipelineManager*> App::pipelines() {
    if (pipelines_) return pipelines_.get();
    vk::Device* d = TDM_TRY(device());
    pipelines_ = std::make_unique<vk::PipelineManager>(*d);
    return pipelines_.get();
}

Result<Registry*> App::registry() {
    if (registry_) return registry_.get();
    const PluginSearch s = TDM_TRY(plugin_search(*this));
    registry_ = TDM_TRY(load_plugins(s));
    if (!s.disabled.empty()) {
        // A disabled plugin is never opened, so its name is known only from its file name.
        std::vector<std::string> found;
        for (const auto& p : registry_->plugins()) found.push_back(p->name);
        for (const std::string& dir : plugin_search_dirs(s)) {
            std::error_code ec;
            for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
                const std::string file = e.path().filename().string();
                if (file.starts_with("tandem-") && file.ends_with(".so"))
                    found.push_back(file.substr(7, file.size() - 7 - 3));
            }
        }
        if (std::string unknown = unknown_disabled_plugins(s.disabled, found); !unknown.empty())
            TDM_LOG_WARN("plugins", "{}", unknown);
    }
    return registry_.get();
}

namespace {

// [model] host_rows, which the config rules limit to these three words
WeightStore::HostTables host_tables_mode(const std::string& s) {
    return s == "on" ? WeightStore::HostTables::on
           : s == "off" ? WeightStore::HostTables::off
                        : WeightStore::HostTables::automatic;
}

}  // namespace

Result<std::unique_ptr<Model>> App::load_model(const std::string& path) {
    if (path.empty())
        return Error("no model given: use -m FILE (a GGUF file or a Hugging Face directory), or set [model] path in "
                     "the config file");
    Registry* reg = TDM_TRY(registry());
    vk::Device* dev = TDM_TRY(device());
    ModelLoadOptions opt;
    opt.check_weights = config_.model.check_weights;
    opt.host_rows = host_tables_mode(config_.model.host_rows);
    opt.host_rows_share = config_.model.host_rows_share;
    opt.int8_matmul = config_.model.int8_matmul == "on";
    const bool tty = isatty(fileno(stderr));
    auto last = std::chrono::steady_clock::now();
    if (tty) {
        opt.progress = [&last, path](uint64_t done, uint64_t total) {
            const auto now = std::chrono::steady_clock::now();
            if (now - last < std::chrono::milliseconds(100) && done < total) return;
            last = now;
            std::fprintf(stderr, "\rloading %s: %3d%% (%s / %s)  ", path.c_str(),
                         total ? int(100.0 * double(done) / double(total)) : 100, vk::format_bytes(done).c_str(),
                         vk::format_bytes(total).c_str());
        };
    }
    auto m = Model::load(path, *reg, *dev, opt);
    if (tty) std::fprintf(stderr, "\r\033[K");
    if (m.ok()) TDM_TRY(tune_model_at_first_load(*this, **m));
    return m;
}

KvPoolConfig kv_config(const Config& config, uint32_t n_ctx_train, bool speculative, uint32_t n_seq) {
    KvPoolConfig kc;
    kc.n_ctx = config.model.n_ctx > 0 ? uint32_t(config.model.n_ctx) : n_ctx_train;
    kc.n_seq_max = n_seq;
    kc.f16 = config.model.kv_type != "f32";
    kc.memory_budget = config.model.kv_memory;
    // recurrent-state checkpoints: a verify pass of draft_max + 1 tokens plus the current one
    kc.n_checkpoints = speculative ? uint32_t(std::max(2, config.speculative.draft_max + 2)) : 2u;
    // the widest pass stores a prefill chunk or a verify of draft_max + 1 rows (sliding-window rings)
    kc.rows_max = ring_rows_max(uint32_t(config.model.n_batch),
                                speculative ? uint32_t(config.speculative.draft_max + 1) : 1u);
    return kc;
}

void fit_checkpoints(KvPoolConfig& kc, std::span<const tdm_recurrent_state> states, bool speculative,
                     uint64_t max_binding) {
    if (!speculative) return;
    const uint32_t fit = checkpoints_that_fit(states, kc.n_seq_max, max_binding, kc.n_checkpoints);
    if (fit >= 3 && fit < kc.n_checkpoints) kc.n_checkpoints = fit;
}

Result<std::unique_ptr<KvPool>> App::make_kv(const Model& model, bool speculative, uint32_t n_seq) {
    vk::Device* dev = TDM_TRY(device());
    KvPoolConfig kc = kv_config(config_, model.info().n_ctx_train, speculative, n_seq);
    const uint32_t wanted = kc.n_checkpoints;
    fit_checkpoints(kc, model.recurrent_states(), speculative, dev->caps().max_storage_buffer_range);
    if (kc.n_checkpoints < wanted)
        TDM_LOG_INFO("kv", "{} sequences: {} recurrent-state checkpoints fit one binding, not {}: at most {} drafts "
                     "per round",
                     n_seq, kc.n_checkpoints, wanted, kc.n_checkpoints - 2);
    return KvPool::create(*dev, model.attention_layers(), kc, "KV cache of " + model.source().path(),
                          model.recurrent_states());
}

void App::finish() {
    if (profile_json_) {
        vk::global_profiler().set_run_sink({});
        profile_json_.reset();
        if (!profile_table_) return;  // the file was asked for, not the table
    }
    if (device_ && device_->profiling() && !vk::global_profiler().empty())
        std::fprintf(stderr, "\nGPU time per op (--profile):\n%s", vk::global_profiler().table().c_str());
}

void App::write_profiles_to(std::unique_ptr<ProfileJsonWriter> writer) {
    profile_json_ = std::move(writer);
    // the sink holds the writer too: a pass still being waited for when finish() drops it
    // writes to a live file
    vk::global_profiler().set_run_sink(
        [w = profile_json_](std::span<const vk::ProfiledDispatch> run) { w->write_run(run); });
    profile_table_ = config_.device.profile;
    config_.device.profile = true;  // timestamps for the file; App::device() reads this
}

int run_cli(int argc, const char* const* argv) {
    if (argc >= 2 && std::string_view(argv[1]) == kScanSubcommand) return cmd_scan_plugin(argc, argv);
    const ProgramSpec& spec = program_spec();
    auto args = parse_args(spec, argc, argv);
    if (!args.ok()) {
        std::fprintf(stderr, "tandem: %s\nRun `tandem --help` for usage.\n", args.error().message().c_str());
        return 2;
    }
    if (!args->help_requested() && args->flag("version")) {
        std::fputs(version_text().c_str(), stdout);
        return 0;
    }
    if (args->help_requested() || args->command().empty()) {
        std::fputs(help_text(spec, args->command()).c_str(), stdout);
        return args->command().empty() && !args->help_requested() ? 2 : 0;
    }
    if (auto lvl = args->get_string("log-level")) {
        LogLevel l;
        if (!parse_log_level(*lvl, &l)) {
            std::fprintf(stderr, "tandem: --log-level: unknown level '%s' (trace, debug, info, warn, error, off)\n",
                         lvl->c_str());
            return 2;
        }
        set_log_level(l);
    }
    if (Status st = check_option_conflicts(*args); !st.ok()) {
        std::fprintf(stderr, "tandem: %s\nRun `tandem --help` for usage.\n", st.error().message().c_str());
        return 2;
    }
    auto config = merged_config(*args);
    if (!config.ok()) {
        std::fprintf(stderr, "tandem: %s\n", config.error().message().c_str());
        return 1;
    }
    if (!args->get_string("log-level")) {
        LogLevel l;
        if (!std::getenv("TANDEM_LOG") && parse_log_level(config->log.level, &l)) set_log_level(l);
    }
    set_lavapipe_threads();  // before the first Vulkan call, which is in App
    App app(*args, std::move(config).value());
    if (auto path = args->get_string("profile-json")) {
        auto writer = ProfileJsonWriter::open(*path);
        if (!writer.ok()) {
            std::fprintf(stderr, "tandem: %s\n", writer.error().message().c_str());
            return 1;
        }
        app.write_profiles_to(std::move(writer).value());
    }
    const std::string& c = args->command();
    Status st = c == "run"        ? cmd_run(app)
                : c == "ocr"      ? cmd_ocr(app)
                : c == "chat"     ? cmd_chat(app)
                : c == "serve"    ? cmd_serve(app)
                : c == "info"     ? cmd_info(app)
                : c == "tokenize" ? cmd_tokenize(app)
                : c == "plugins"  ? cmd_plugins(app)
                : c == "devices"  ? cmd_devices(app)
                : c == "synth"    ? cmd_synth(app)
                : c == "demo"     ? cmd_demo(app)
                : c == "bench"    ? cmd_bench(app)
                : c == "tune"     ? cmd_tune(app)
                                  : Status(Error::format("unknown command '{}'", c));
    app.finish();
    if (!st.ok()) {
        std::fflush(stdout);
        std::fprintf(stderr, "tandem %s: error: %s\n", c.c_str(), st.error().message().c_str());
        return 1;
    }
    return app.exit_code();
}

}  // namespace tdm::cli
