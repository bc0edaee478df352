// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_bench_serve.cpp: `tandem bench serve`: the continuous-batching engine of
// `tandem serve` (engine/batch_engine.h) under a closed loop of C clients (each sends its
// next request when the last one ends), for each C of --concurrency: aggregate output
// tokens/s, time to first token and time per output token (p50, p99), rows per forward
// pass, drafts accepted. In process, without HTTP, so that it measures the engine. With
// --vs-plain, each level runs plain and speculative in turn, --pairs times, and reports the
// median of the pairs' speedups: on machines whose speed drifts, the one robust figure.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/bench_common.h"
#include "cli/commands.h"
#include "cli/memory_plan.h"
#include "engine/batch_engine.h"
#include "serve/generation_settings.h"
#include "serve/make_drafters.h"

namespace tdm::cli {
namespace {

struct RequestTimes {
    double added = 0, first = 0, last = 0;
    uint32_t tokens = 0;
    bool failed = false;
};

double percentile(std::vector<double> v, double q) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const size_t i = std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5));
    return v[i];
}

Result<std::vector<uint32_t>> concurrency_levels(const std::string& text) {
    std::vector<uint32_t> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        char* end = nullptr;
        const long v = std::strtol(item.c_str(), &end, 10);
        if (item.empty() || *end || v < 1 || v > 256)
            return Error::format("--concurrency: '{}' is not a number of streams from 1 to 256", item);
        out.push_back(uint32_t(v));
    }
    if (out.empty()) return Error("--concurrency needs at least one number of streams");
    return out;
}

struct LevelSetup {
    Model* model = nullptr;
    vk::Device* dev = nullptr;
    vk::PipelineManager* pm = nullptr;
    uint32_t plen = 0;
    int32_t gen = 0;
    uint64_t seed = 0;
};

// One level: C clients in a closed loop, n_requests timed requests (after C warm-up ones
// that build the graphs of the common shapes), with the configured drafters or none.
Result<nlohmann::json> run_level(App& app, const LevelSetup& ls, uint32_t c, uint32_t n_requests, bool speculative) {
    const Config& cfg = app.config();
    Model& model = *ls.model;
    auto kv = TDM_TRY(app.make_kv(model, speculative, c));
    Runner runner(model, *kv, *ls.dev, *ls.pm);
    DrafterChain chain;
    if (speculative) chain = TDM_TRY(make_drafters(app, model, *kv, false, c + 1));
    BatchEngineOptions eo;
    eo.n_batch = uint32_t(cfg.model.n_batch);
    eo.hidden_point = chain_hidden_point(chain.order);
    auto engine = TDM_TRY(BatchEngine::create(runner, nullptr, eo, shared_drafters(chain.order, chain.fresh)));

    std::vector<RequestTimes> times;
    uint32_t in_flight = 0;
    auto submit = [&](uint32_t id, int32_t max_tokens, bool timed) -> Status {
        SessionRequest r;
        r.prompt = bench_prompt(model, ls.plen, ls.seed + id);
        r.params.max_tokens = max_tokens;
        r.params.sampling.temperature = 0;
        r.params.ignore_eog = true;
        r.spec = spec_params(cfg);
        r.drafters = TDM_TRY(request_drafters(chain.order, chain.fresh));
        RequestTimes* t = timed ? &times[id] : nullptr;
        if (t) t->added = now_s();
        r.on_token = [t](int32_t tok, std::string_view, const TokenLogprobs*) {
            if (t && tok >= 0) {
                t->last = now_s();
                if (t->tokens++ == 0) t->first = t->last;
            }
            return true;
        };
        r.on_done = [t, &in_flight](const SessionResult& res) {
            --in_flight;
            if (t && res.stop_reason == StopReason::error) t->failed = true;
        };
        ++in_flight;
        engine->add(std::move(r));
        return {};
    };
    // warm-up: the pipelines and the graphs of the common shapes
    for (uint32_t i = 0; i < c; ++i) TDM_TRY(submit(n_requests + i, 4, false));
    while (engine->step()) {
    }

    times.assign(n_requests, {});
    const BatchEngineStats before = engine->stats();
    const double t0 = now_s();
    uint32_t next = 0;
    while (true) {
        while (in_flight < c && next < n_requests) TDM_TRY(submit(next++, ls.gen, true));
        if (!engine->step() && next >= n_requests) break;
    }
    const double wall = now_s() - t0;
    const BatchEngineStats& st = engine->stats();

    std::vector<double> ttft, tpot;
    uint64_t out_tokens = 0, failed = 0;
    for (const RequestTimes& t : times) {
        out_tokens += t.tokens;
        failed += t.failed;
        if (t.tokens) ttft.push_back((t.first - t.added) * 1e3);
        if (t.tokens > 1) tpot.push_back((t.last - t.first) * 1e3 / double(t.tokens - 1));
    }
    const uint64_t steps = st.steps - before.steps;
    nlohmann::json l;
    l["concurrency"] = c;
    l["requests"] = n_requests;
    l["failed"] = failed;
    l["output_tokens"] = out_tokens;
    l["wall_s"] = wall;
    l["output_tokens_per_s"] = double(out_tokens) / wall;
    // the streams' decoding rate together, prefill left out: C tokens per mean TPOT
    double tpot_mean = 0;
    for (double v : tpot) tpot_mean += v / double(tpot.size());
    l["decode_tokens_per_s"] = tpot_mean > 0 ? double(c) * 1e3 / tpot_mean : 0;
    l["ttft_ms_p50"] = percentile(ttft, 0.5);
    l["ttft_ms_p99"] = percentile(ttft, 0.99);
    l["tpot_ms_p50"] = percentile(tpot, 0.5);
    l["tpot_ms_p99"] = percentile(tpot, 0.99);
    l["forward_passes"] = steps;
    l["rows_per_pass"] = steps ? double(st.rows - before.rows) / double(steps) : 0;
    l["drafted"] = st.drafted - before.drafted;
    l["accepted"] = st.accepted - before.accepted;
    l["preemptions"] = st.preemptions - before.preemptions;
    l["cached_graphs"] = runner.cached_graphs();
    l["graph_memory_bytes"] = runner.graph_memory();
    l["kv_bytes"] = kv->device_bytes();
    return l;
}

}  // namespace

Status bench_serve(App& app) {
    const ParsedArgs& a = app.args();
    const Config& cfg = app.config();
    const auto levels = TDM_TRY(concurrency_levels(a.get_string("concurrency").value_or("1,4,8,16")));
    LevelSetup ls;
    ls.plen = uint32_t(a.get_int("prompt-len").value_or(32));
    ls.gen = int32_t(a.get_int("gen-tokens").value_or(32));
    ls.seed = uint64_t(a.get_int("seed").value_or(1));
    const bool speculative = !spec_types(cfg).empty();
    const bool vs_plain = a.flag("vs-plain");
    const uint32_t pairs = uint32_t(a.get_int("pairs").value_or(3));
    if (vs_plain && !speculative) return Error("--vs-plain compares speculative decoding with plain: give --spec-type");
    if (a.has("pairs") && !vs_plain) return Error("--pairs counts the plain/speculative pairs of --vs-plain");
    ls.dev = TDM_TRY(app.device());
    ls.pm = TDM_TRY(app.pipelines());
    const uint32_t widest = *std::max_element(levels.begin(), levels.end());
    TDM_TRY(check_memory_fits(app, cfg.model.path,
                              RunShape{.speculative = speculative, .sequences = widest, .head_sequences = widest + 1}));
    auto model = TDM_TRY(app.load_model(cfg.model.path));
    ls.model = model.get();

    nlohmann::json j;
    j["model"] = cfg.model.path;
    j["device"] = ls.dev->caps().name;
    j["prompt_tokens"] = ls.plen;
    j["gen_tokens"] = ls.gen;
    j["speculative"] = speculative ? nlohmann::json(spec_types(cfg)) : nlohmann::json(nullptr);
    j["levels"] = nlohmann::json::array();
    for (const uint32_t c : levels) {
        const uint32_t n_requests = a.has("requests") ? uint32_t(*a.get_int("requests")) : std::max(4u, 2 * c);
        if (!vs_plain) {
            nlohmann::json l = TDM_TRY(run_level(app, ls, c, n_requests, speculative));
            if (!a.flag("json"))
                std::fprintf(stderr, "concurrency %u: %.2f tok/s\n", c, l["output_tokens_per_s"].get<double>());
            j["levels"].push_back(std::move(l));
            continue;
        }
        // Plain and speculative in turn, pair after pair: these machines' speed drifts, so
        // only ratios within a pair mean something (docs/BENCHMARKS.md).
        std::vector<nlohmann::json> runs[2];
        std::vector<double> ratio, decode_ratio;
        for (uint32_t p = 0; p < pairs; ++p) {
            for (int sp = 0; sp < 2; ++sp) runs[sp].push_back(TDM_TRY(run_level(app, ls, c, n_requests, sp == 1)));
            const auto& plain = runs[0].back();
            const auto& spec = runs[1].back();
            ratio.push_back(spec["output_tokens_per_s"].get<double>() / plain["output_tokens_per_s"].get<double>());
            decode_ratio.push_back(spec["decode_tokens_per_s"].get<double>() /
                                   std::max(1e-9, plain["decode_tokens_per_s"].get<double>()));
            if (!a.flag("json"))
                std::fprintf(stderr, "concurrency %u, pair %u: plain %.2f tok/s, speculative %.2f tok/s (%.3fx)\n", c,
                             p + 1, plain["output_tokens_per_s"].get<double>(),
                             spec["output_tokens_per_s"].get<double>(), ratio.back());
        }
        // each side's run of median output tok/s
        auto median_run = [](std::vector<nlohmann::json> v) {
            std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) {
                return x["output_tokens_per_s"].template get<double>() < y["output_tokens_per_s"].template get<double>();
            });
            return v[v.size() / 2];
        };
        nlohmann::json l;
        l["concurrency"] = c;
        l["pairs"] = pairs;
        l["plain"] = median_run(runs[0]);
        l["speculative"] = median_run(runs[1]);
        l["speedup_median"] = median(ratio);
        l["speedup_min"] = *std::min_element(ratio.begin(), ratio.end());
        l["speedup_max"] = *std::max_element(ratio.begin(), ratio.end());
        l["decode_speedup_median"] = median(decode_ratio);
        j["levels"].push_back(std::move(l));
    }
    j["peak_rss_bytes"] = peak_rss_bytes();
    if (a.flag("json")) {
        std::printf("%s\n", j.dump(2).c_str());
        return {};
    }
    std::printf("model %s on %s, prompts of %u tokens, %d generated each, speculative: %s\n", cfg.model.path.c_str(),
                ls.dev->caps().name.c_str(), ls.plen, ls.gen, speculative ? j["speculative"].dump().c_str() : "off");
    if (vs_plain) {
        std::printf("%5s %6s %12s %12s %10s %16s %12s %9s\n", "conc", "pairs", "plain tok/s", "spec tok/s", "speedup",
                    "(min..max)", "decode sp.", "accepted");
        for (const auto& l : j["levels"])
            std::printf("%5u %6u %12.2f %12.2f %9.3fx  (%.3f..%.3f) %11.3fx %4llu/%-4llu\n", l["concurrency"].get<uint32_t>(),
                        l["pairs"].get<uint32_t>(), l["plain"]["output_tokens_per_s"].get<double>(),
                        l["speculative"]["output_tokens_per_s"].get<double>(), l["speedup_median"].get<double>(),
                        l["speedup_min"].get<double>(), l["speedup_max"].get<double>(),
                        l["decode_speedup_median"].get<double>(),
                        (unsigned long long)l["speculative"]["accepted"].get<uint64_t>(),
                        (unsigned long long)l["speculative"]["drafted"].get<uint64_t>());
        return {};
    }
    std::printf("%5s %8s %10s %10s %10s %10s %10s %10s %9s %9s\n", "conc", "requests", "tok/s", "decode/s", "ttft p50",
                "ttft p99", "tpot p50", "tpot p99", "rows/pass", "accepted");
    for (const auto& l : j["levels"])
        std::printf("%5u %8u %10.2f %10.2f %9.0fms %9.0fms %9.1fms %9.1fms %9.2f %4llu/%-4llu\n",
                    l["concurrency"].get<uint32_t>(), l["requests"].get<uint32_t>(),
                    l["output_tokens_per_s"].get<double>(), l["decode_tokens_per_s"].get<double>(),
                    l["ttft_ms_p50"].get<double>(),
                    l["ttft_ms_p99"].get<double>(), l["tpot_ms_p50"].get<double>(), l["tpot_ms_p99"].get<double>(),
                    l["rows_per_pass"].get<double>(), (unsigned long long)l["accepted"].get<uint64_t>(),
                    (unsigned long long)l["drafted"].get<uint64_t>());
    return {};
}

}  // namespace tdm::cli
