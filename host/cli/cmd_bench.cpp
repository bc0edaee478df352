// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_bench.cpp: `tandem bench ops|decode|spec` (serve and image: their own files). Numbers are wall-clock
// medians; nothing here asserts a speed (benchmarks, not tests).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/device_bandwidth.h"
#include "bench/op_bench.h"
#include "cli/bench_common.h"
#include "cli/commands.h"
#include "cli/memory_plan.h"
#include "engine/generate.h"
#include "serve/generation_settings.h"
#include "serve/make_drafters.h"
#include "speculative/draft_head.h"
#include "speculative/forced_drafter.h"
#include "speculative/goodput_history.h"

namespace tdm::cli {

double now_s() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

uint64_t peak_rss_bytes() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return uint64_t(ru.ru_maxrss) * 1024;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<int32_t> bench_prompt(const Model& model, uint32_t len, uint64_t seed) {
    std::mt19937_64 rng(seed);
    // ids of ordinary text tokens: stay below the specials at the end of a synthetic vocabulary
    const uint32_t hi = std::max<uint32_t>(2, std::min<uint32_t>(model.info().n_vocab, 4096));
    std::vector<int32_t> p(len);
    for (auto& t : p) t = int32_t(rng() % hi);
    return p;
}

namespace {

// --prompt-kind zipf: ids drawn by a Zipf law in id order, P(id) ~ (id + 1)^-1.1, as the
// ids of BPE vocabularies in merge order roughly are in real text (with Qwen3's tokenizer
// English prose has 16.9/10.2/5.2/1.6% of its tokens at ids >= 8k/16k/32k/64k; this law
// gives 13.6/10.0/6.6/3.5% over 151k ids, 8.4% beyond 32k over 247k). Closer to what the
// automatic draft vocabulary sees in real use than the uniform `random` ids below 4096.
std::vector<int32_t> zipf_prompt(const Model& model, uint32_t len, uint64_t seed) {
    const uint32_t n_vocab = model.info().n_vocab;
    // stay below the specials at the end of a synthetic vocabulary
    const uint32_t hi = n_vocab > 8192 ? n_vocab - 1024 : std::max<uint32_t>(n_vocab, 1);
    std::vector<double> w(hi);
    for (uint32_t r = 0; r < hi; ++r) w[r] = std::pow(double(r) + 1, -1.1);
    std::discrete_distribution<int32_t> law(w.begin(), w.end());
    std::mt19937_64 rng(seed);
    std::vector<int32_t> p(len);
    for (auto& t : p) t = law(rng);
    return p;
}

// Draft rounds by the width of their draft logits (a draft head's; "all": every id, or a
// head that picks its own tokens), as JSON.
nlohmann::json vocab_rounds_json(const std::map<uint32_t, uint64_t>& now, const std::map<uint32_t, uint64_t>& before) {
    nlohmann::json j = nlohmann::json::object();
    for (const auto& [vocab, n] : now) {
        const auto b = before.find(vocab);
        const uint64_t d = n - (b == before.end() ? 0 : b->second);
        if (d) j[vocab ? std::to_string(vocab) : "all"] = d;
    }
    return j;
}

// Host memory read bandwidth (GB/s): all cores summing a 1 GiB buffer, best of 3.
double measure_read_bandwidth() {
    const size_t n = (1u << 30) / sizeof(uint64_t);
    std::vector<uint64_t> buf(n, 1);
    const unsigned nt = std::max(1u, std::thread::hardware_concurrency());
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
        std::vector<uint64_t> sums(nt);
        const double t0 = now_s();
        std::vector<std::thread> th;
        for (unsigned t = 0; t < nt; ++t)
            th.emplace_back([&, t] {
                const uint64_t* p = buf.data() + n / nt * t;
                uint64_t s = 0;
                for (size_t i = 0; i < n / nt; ++i) s += p[i];
                sums[t] = s;
            });
        for (auto& x : th) x.join();
        const double dt = now_s() - t0;
        uint64_t total = 0;
        for (auto s : sums) total += s;
        if (total != n / nt * nt) return 0;  // keeps the loop from being optimised away
        best = std::max(best, double(n * sizeof(uint64_t)) / dt / 1e9);
    }
    return best;
}


// --prompt-kind: repetitive prompts for the draftless (n-gram) drafters, made
// from S (a random prompt) and L, the target's own greedy continuation of S
// (gen-tokens + 8 tokens):
//   listing  S + L' + S, L' = L with its middle token replaced by another id:
//            "repeat this listing, with one change";
//   list     S + L + S + L + S: a list that repeats.
// A model that copies its context (a real LM; the synthetic --repeating one,
// whose next token depends only on the last) answers with L, which a drafter
// can find in the prompt. L is generated on a sequence of its own.
Result<std::vector<int32_t>> repetitive_prompt(Runner& runner, KvPool& kv, const std::string& kind,
                                               const std::vector<int32_t>& s, int32_t gen, uint32_t n_batch) {
    GenerateParams gp;
    gp.max_tokens = gen + 8;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    gp.n_batch = n_batch;
    const int seq = TDM_TRY(kv.add_sequence());
    auto cont = generate(runner, nullptr, seq, s, gp, {});
    kv.free_sequence(seq);
    std::vector<int32_t> l = TDM_TRY(std::move(cont)).tokens;
    std::vector<int32_t> p = s;
    if (kind == "listing") {
        std::vector<int32_t> changed = l;
        const size_t mid = changed.size() / 2;
        changed[mid] = s[mid % s.size()] != changed[mid] ? s[mid % s.size()] : s[(mid + 1) % s.size()];
        p.insert(p.end(), changed.begin(), changed.end());
    } else {
        p.insert(p.end(), l.begin(), l.end());
        p.insert(p.end(), s.begin(), s.end());
        p.insert(p.end(), l.begin(), l.end());
    }
    p.insert(p.end(), s.begin(), s.end());
    return p;
}

Status bench_ops(App& app) {
    const ParsedArgs& a = app.args();
    OpBenchOptions o;
    o.types.clear();
    std::string cur;
    for (char c : a.get_string("types").value_or("f16,q8_0,q4_K") + ",") {
        if (c == ',') {
            if (!cur.empty()) o.types.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (auto b = a.get_sizes("batches")) {
        o.batches.clear();
        for (auto x : *b) o.batches.push_back(int(x));
    }
    if (auto t = a.get_sizes("attention-tokens"))
        for (auto x : *t) o.attention_tokens.push_back(int(x));
    o.iterations = int(a.get_int("iterations").value_or(9));
    if (auto m = a.get_string("matrix")) {
        long long rows = 0, cols = 0;
        char x = 0;
        if (std::sscanf(m->c_str(), "%lld%c%lld", &rows, &x, &cols) != 3 || x != 'x' || rows < 1 || cols < 32 ||
            cols % 256 || rows > (1 << 20) || cols > (1 << 16))
            return Error::format("--matrix '{}': give ROWSxCOLS, COLS a multiple of 256 (e.g. 6144x1024)", *m);
        o.rows = rows;
        o.cols = cols;
    }
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    nlohmann::json j = TDM_TRY(run_op_bench(*dev, *pm, o));
    if (a.flag("json")) {
        std::printf("%s\n", j.dump(2).c_str());
        return {};
    }
    std::printf("device: %s (weights via %s)\ndispatch overhead: %.1f us\n", j["device"].get<std::string>().c_str(),
                j["weight_path"].get<std::string>().c_str(), j["dispatch_overhead_us"].get<double>());
    std::printf("device copy: %.1f GB/s (read + write of %s)\n", j["device_copy"]["gb_per_s"].get<double>(),
                human_bytes(j["device_copy"]["buffer_bytes"].get<uint64_t>()).c_str());
    std::printf("%-6s %6s %10s %10s %12s %14s %10s %10s\n", "type", "batch", "ms", "GB/s", "ms/token", "N*t1/tN",
                "gpu ms", "gpu GB/s");
    for (const auto& r : j["matmul"])
        std::printf("%-6s %6d %10.3f %10.2f %12.3f %14.2f %10.3f %10.2f\n", r["type"].get<std::string>().c_str(),
                    r["batch"].get<int>(), r["ms"].get<double>(), r["gb_per_s"].get<double>(),
                    r["ms_per_token"].get<double>(), r.value("n_x_single_over_batch", 1.0), r.value("gpu_ms", 0.0),
                    r.value("gpu_gb_per_s", 0.0));
    if (!j["matmul"].empty() && !j["matmul"][0].contains("gpu_ms"))
        std::printf("(gpu ms: run with --profile for the kernels' own times from device timestamps)\n");
    if (j.contains("attention_full")) {
        std::printf("\nattention_full (%d heads of %d)\n%8s %10s %10s\n", int(o.attention_heads),
                    int(o.attention_head_dim), "tokens", "ms", "GFLOP/s");
        for (const auto& r : j["attention_full"])
            std::printf("%8d %10.1f %10.2f\n", r["tokens"].get<int>(), r["ms"].get<double>(),
                        r["gflop_per_s"].get<double>());
    }
    return {};
}

Status bench_decode(App& app) {
    const ParsedArgs& a = app.args();
    const Config& cfg = app.config();
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    const double t0 = now_s();
    TDM_TRY(check_memory_fits(app, cfg.model.path, false));
    auto model = TDM_TRY(app.load_model(cfg.model.path));
    const double load_s = now_s() - t0;
    auto kv = TDM_TRY(app.make_kv(*model, false));
    Runner runner(*model, *kv, *dev, *pm);
    const int seq = TDM_TRY(kv->add_sequence());
    const uint32_t plen = uint32_t(a.get_int("prompt-len").value_or(32));
    const int32_t gen = int32_t(a.get_int("gen-tokens").value_or(32));
    const auto prompt = bench_prompt(*model, plen, uint64_t(a.get_int("seed").value_or(1)));

    GenerateParams gp;
    gp.max_tokens = gen;
    gp.sampling.temperature = 0;
    gp.ignore_eog = true;
    gp.n_batch = uint32_t(cfg.model.n_batch);
    {  // warm-up: pipelines and graphs of both shapes, first-touch of memory
        GenerateParams w = gp;
        w.max_tokens = 3;
        TDM_TRY(generate(runner, nullptr, seq, prompt, w, {}));
        TDM_TRY(kv->truncate(seq, 0));
    }
    const GenerateResult r = TDM_TRY(generate(runner, nullptr, seq, prompt, gp, {}));
    const uint64_t bytes = runner.matmul_weight_bytes();
    const GraphCounts step = TDM_TRY(runner.graph_counts(1, 1));  // the decode step's graph, compiled above
    const uint64_t peak_rss = peak_rss_bytes();  // before the bandwidth probe's 1 GiB buffer
    // The ceiling of a memory-bound step: on a CPU device the host's read bandwidth (device
    // memory is host memory), on a GPU its own memory's, measured by a device copy.
    const bool cpu_device = dev->caps().is_cpu();
    const double bw = cpu_device ? measure_read_bandwidth() : TDM_TRY(measure_device_copy_bandwidth(*dev)).gb_per_s;
    const double ms_per_token = r.stats.decode_ms / std::max<uint32_t>(1, r.stats.n_generated);
    const double limit_tps = bytes ? bw * 1e9 / double(bytes) : 0;
    nlohmann::json j;
    j["model"] = cfg.model.path;
    j["device"] = dev->caps().name;
    j["architecture"] = model->arch().desc->name;
    j["n_params_bytes"] = model->weight_bytes();
    j["prompt_tokens"] = r.stats.n_prompt;
    j["generated_tokens"] = r.stats.n_generated;
    j["prefill_tokens_per_s"] = r.stats.prefill_tps();
    j["decode_tokens_per_s"] = r.stats.decode_tps();
    j["decode_ms_per_token"] = ms_per_token;
    j["weight_bytes_per_token"] = bytes;
    j["step_dispatches"] = step.dispatches;
    j["step_barriers"] = step.barriers;
    j["step_host_memory_dispatches"] = step.host_memory_dispatches;
    j["bandwidth_gb_s"] = bw;
    j["bandwidth_source"] = cpu_device ? "host read" : "device copy";
    if (cpu_device) j["host_read_bandwidth_gb_s"] = bw;  // the name scripts read before GPUs had their own
    j["bandwidth_limit_tokens_per_s"] = limit_tps;
    j["fraction_of_limit"] = limit_tps > 0 ? r.stats.decode_tps() / limit_tps : 0;
    j["load_s"] = load_s;
    j["file_bytes"] = model->source().file_bytes();
    j["kv_bytes"] = kv->device_bytes();
    j["kv_context"] = kv->capacity_tokens();
    j["peak_rss_bytes"] = peak_rss;
    j["device_memory_peak_bytes"] = dev->peak_allocated_bytes();
    if (a.flag("json")) {
        std::printf("%s\n", j.dump(2).c_str());
        return {};
    }
    std::printf("model %s on %s\n", cfg.model.path.c_str(), dev->caps().name.c_str());
    std::printf("prefill: %u tokens, %.2f tok/s\n", r.stats.n_prompt, r.stats.prefill_tps());
    std::printf("decode:  %u tokens, %.2f tok/s (%.1f ms/token)\n", r.stats.n_generated, r.stats.decode_tps(),
                ms_per_token);
    std::printf("weights read per token %s, %s bandwidth %.1f GB/s -> limit %.2f tok/s; achieved %.0f%%\n",
                human_bytes(bytes).c_str(), cpu_device ? "host read" : "device copy", bw, limit_tps, limit_tps > 0 ? 100.0 * r.stats.decode_tps() / limit_tps : 0.0);
    std::printf("per decode step: %u dispatches (%u binding host memory), %u barriers\n", step.dispatches,
                step.host_memory_dispatches, step.barriers);
    std::printf("memory: file %s, KV %s (%u tokens), peak RSS %s, device peak %s\n",
                human_bytes(model->source().file_bytes()).c_str(), human_bytes(kv->device_bytes()).c_str(),
                kv->capacity_tokens(), human_bytes(peak_rss).c_str(),
                human_bytes(dev->peak_allocated_bytes()).c_str());
    return {};
}

// A speculative run against its own plain steps: its decoded tokens at what its plain steps
// cost (the pass and settling its token), over what all its passes took (plain steps,
// verifies, drafting, settling each pass's tokens). A plain
// step is the same graph in both runs (a head's one more dispatch copies the hidden row), so
// where the controller takes plain steps this compares the two at the same moment: on
// lavapipe a plain run before and one after a speculative run differed by up to 7%, more than
// the 3% the goals allow. Only with at least kOwnPlainSteps plain steps (0 otherwise).
constexpr uint64_t kOwnPlainSteps = 8;
struct OwnPlainSpeedup {
    double plain_step_ms = 0, plain_ms = 0, spent_ms = 0, speedup = 0;
};
OwnPlainSpeedup own_plain_speedup(const SpecResult& sr) {
    OwnPlainSpeedup o;
    const SpecStats& st = sr.stats;
    o.spent_ms = st.plain_ms + st.verify_ms + st.draft_ms + st.accept_ms;
    if (st.plain_steps < kOwnPlainSteps || sr.gen.tokens.size() < 2 || o.spent_ms <= 0) return o;
    o.plain_step_ms = (st.plain_ms + st.plain_accept_ms) / double(st.plain_steps);
    o.plain_ms = o.plain_step_ms * double(sr.gen.tokens.size() - 1);  // the first came with the prompt
    o.speedup = o.plain_ms / o.spent_ms;
    return o;
}

// Plain vs speculative decoding per prompt, each on fresh state (seed 002's
// bench-speculative, extended): matched, acceptance, tokens per target pass,
// TPOT, tokens/s, speedup end to end and decode-only.
Status bench_spec(App& app) {
    const ParsedArgs& a = app.args();
    const Config& cfg = app.config();
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    TDM_TRY(check_memory_fits(app, cfg.model.path, true));
    auto model = TDM_TRY(app.load_model(cfg.model.path));
    auto kv = TDM_TRY(app.make_kv(*model, true));
    Runner runner(*model, *kv, *dev, *pm);
    const uint32_t plen = uint32_t(a.get_int("prompt-len").value_or(32));
    const int32_t gen = int32_t(a.get_int("gen-tokens").value_or(32));
    const int n_prompts = int(a.get_int("prompts").value_or(4));
    const uint64_t seed = uint64_t(a.get_int("seed").value_or(1));
    const std::optional<double> force = a.get_number("force-acceptance");
    // --bracket: each prompt's plain decode runs again after its speculative run, and the
    // speculative run is compared with the mean of the two. A machine whose speed drifts
    // (lavapipe's wanders 10-30% over tens of seconds) otherwise hands a pair's ratio the
    // drift between its two runs; bracketed, a steady drift cancels.
    const bool bracket = a.flag("bracket");
    if (force && (*force < 0 || *force > 1)) return Error("--force-acceptance must be in [0, 1]");
    const std::string kind = a.get_string("prompt-kind").value_or("random");
    if (kind != "random" && kind != "zipf" && kind != "listing" && kind != "list")
        return Error::format("--prompt-kind: unknown kind '{}' (random, zipf, listing, list)", kind);
    std::vector<std::vector<int32_t>> bench_prompts;
    for (int i = 0; i < n_prompts; ++i) {
        std::vector<int32_t> p =
            kind == "zipf" ? zipf_prompt(*model, plen, seed + uint64_t(i)) : bench_prompt(*model, plen, seed + uint64_t(i));
        if (kind != "random" && kind != "zipf") p = TDM_TRY(repetitive_prompt(runner, *kv, kind, p, gen, uint32_t(cfg.model.n_batch)));
        bench_prompts.push_back(std::move(p));
    }
    const int seq = TDM_TRY(kv->add_sequence());

    GenerateParams gp;
    gp.max_tokens = gen;
    gp.sampling = sampler_params(cfg);
    gp.sampling.temperature = 0;  // exactness is defined for greedy decoding
    gp.ignore_eog = true;
    gp.n_batch = uint32_t(cfg.model.n_batch);
    SpecParams sp = spec_params(cfg);
    // the prompts share what the goodput controller learned, as a server's requests do
    // (speculative/goodput_history.h); of the warm-up, only the costs
    sp.history = std::make_shared<GoodputHistory>();
    // with --force-acceptance, a given drafter still runs (its cost is measured)
    // but its tokens are replaced so that acceptance follows A
    DrafterChain chain = TDM_TRY(make_drafters(app, *model, *kv));
    if (chain.empty() && !force)
        return Error("bench spec: give a drafter (-md FILE, --spec-type ...) or --force-acceptance A");
    if (chain.order.size() > 1 && force)
        return Error("bench spec: --force-acceptance takes at most one drafter");
    {  // warm-up: JIT of every graph shape a round uses
        // ids of the same law as the prompts: the draft vocabulary chosen, and so the
        // draft graphs built, follow them
        const auto p = kind == "zipf" ? zipf_prompt(*model, plen, seed ^ 0xabcdef) : bench_prompt(*model, plen, seed ^ 0xabcdef);
        GenerateParams w = gp;
        w.max_tokens = std::min(gen, 8);
        TDM_TRY(generate(runner, nullptr, seq, p, w, {}));
        // and a verify pass of every width a round can use (2 .. draft_max + 1
        // rows): drafters like the n-gram ones vary their draft length, and a
        // round must not pay for building a graph
        const int32_t p0 = int32_t(p.size()) + w.max_tokens - 1;
        for (int n = 2; n <= sp.draft_max + 1; ++n) {
            const size_t rows_n = static_cast<size_t>(n);
            std::vector<int32_t> toks(rows_n, p[0]), pos(rows_n), rows(rows_n);
            for (int r = 0; r < n; ++r) {
                pos[size_t(r)] = p0 + r;
                rows[size_t(r)] = r;
            }
            TDM_TRY(kv->truncate(seq, uint32_t(p0)));  // each width verifies the same positions
            TDM_TRY(runner.forward({toks, pos, seq, rows}));
            // tree verify passes are graphs of their own (runner.h): one of each width the
            // tree can have, shaped as a chain (node r's ancestors are nodes 0..r)
            if (sp.tree.nodes > 1 && uint32_t(n) <= std::min(sp.tree.nodes, kKvTreeMaxNodes)) {
                std::vector<KvTreeRow> tree(rows_n);
                for (int r = 0; r < n; ++r) tree[size_t(r)] = {p0, (uint64_t(2) << r) - 1};
                ForwardInput in{toks, pos, seq, rows};
                in.tree = tree;
                TDM_TRY(kv->truncate(seq, uint32_t(p0)));
                TDM_TRY(runner.forward(in));
            }
        }
        // and the drafter's own graphs (a draft head builds one per catch-up
        // length): a short speculative run at acceptance 1/2 visits most of them
        if (!chain.empty()) {
            TDM_TRY(kv->truncate(seq, 0));
            GenerateParams wg = gp;
            wg.max_tokens = std::max(8, 6 * sp.draft_max);
            const GenerateResult ref = TDM_TRY(generate(runner, nullptr, seq, p, wg, {}));
            TDM_TRY(kv->truncate(seq, 0));
            ForcedDrafter half(ref.tokens, p.size(), 0.5, model->info().n_vocab, seed, chain.order[0]);
            Drafter* order[] = {&half};
            TDM_TRY(generate_speculative(runner, nullptr, seq, p, wg, order, sp, {}));
            // a block head with a graph per (context rows, draft count): also the rounds after
            // no draft and after every draft was accepted, down to the last rounds' counts
            if (auto* h = dynamic_cast<DraftHeadDrafter*>(chain.order[0]); h && h->graph_per_draft_count())
                for (double acceptance : {0.0, 1.0}) {
                    TDM_TRY(kv->truncate(seq, 0));
                    ForcedDrafter edge(ref.tokens, p.size(), acceptance, model->info().n_vocab, seed, h);
                    Drafter* edge_order[] = {&edge};
                    TDM_TRY(generate_speculative(runner, nullptr, seq, p, wg, edge_order, sp, {}));
                }
            // a forced drafter asks its head for chains, so a head that grows trees
            // (--draft-tree) builds its level graphs only in a run of its own
            if (!force && sp.tree.nodes > 1 && chain.order[0]->grows_trees()) {
                TDM_TRY(kv->truncate(seq, 0));
                TDM_TRY(generate_speculative(runner, nullptr, seq, p, wg, chain.order, sp, {}));
            }
            // its drafts were forced to acceptance 1/2: no prior for the prompts' drafter
            sp.history->forget_acceptance();
            // The plain step it hands on is its controller's estimate from the few plain
            // steps it chose: the calibrating ones right after the first round, then at most
            // one per 16 rounds while drafting pays. One slow sample there (on lavapipe the
            // history once handed on 2.3 plain steps) makes every length look better than it
            // is to every prompt. The reference decode above took 6 * draft_max warm plain
            // steps (its graphs built by the first generate): their mean is the baseline. Its
            // graph hands no hidden rows to a head, so it can be a little cheaper than the
            // prompts' plain steps: an error on the cautious side (lengths look a little worse),
            // which the prompts' own plain steps correct.
            if (ref.stats.n_generated > 1)
                sp.history->set_plain_ms(ref.stats.decode_ms / double(ref.stats.n_generated - 1));
        }
        TDM_TRY(kv->truncate(seq, 0));
    }

    auto* head = chain.order.empty() ? nullptr : dynamic_cast<DraftHeadDrafter*>(chain.order[0]);
    const std::map<uint32_t, uint64_t> vocab_before = head ? head->rounds_by_vocab() : std::map<uint32_t, uint64_t>{};
    nlohmann::json prompts = nlohmann::json::array();
    bool all_matched = true;
    double plain_ms = 0, spec_ms = 0, plain_dec_ms = 0, spec_dec_ms = 0;
    uint64_t plain_tokens = 0, spec_tokens = 0;
    // against each speculative run's own plain steps (own_plain_speedup): its tokens at their
    // cost, over the time its passes took
    double own_plain_ms = 0, own_spent_ms = 0;
    int own_prompts = 0;
    SpecStats total;
    for (int i = 0; i < n_prompts; ++i) {
        const std::vector<int32_t>& prompt = bench_prompts[size_t(i)];
        TDM_TRY(kv->truncate(seq, 0));
        const GenerateResult plain = TDM_TRY(generate(runner, nullptr, seq, prompt, gp, {}));
        TDM_TRY(kv->truncate(seq, 0));
        std::unique_ptr<ForcedDrafter> forced;
        std::vector<Drafter*> order = chain.order;
        if (force) {
            forced = std::make_unique<ForcedDrafter>(plain.tokens, prompt.size(), *force, model->info().n_vocab,
                                                     seed * 7919 + uint64_t(i),
                                                     chain.order.empty() ? nullptr : chain.order[0]);
            order = {forced.get()};
        }
        const SpecResult sr = TDM_TRY(generate_speculative(runner, nullptr, seq, prompt, gp, order, sp, {}));
        const auto tpot = [](const GenerateResult& g) {
            return g.stats.decode_ms / double(std::max<size_t>(1, g.tokens.size()));
        };
        bool matched = sr.gen.tokens == plain.tokens;
        double pe = plain.stats.prefill_ms + plain.stats.decode_ms, plain_dec = plain.stats.decode_ms;
        nlohmann::json bracket_j;
        if (bracket) {
            TDM_TRY(kv->truncate(seq, 0));
            const GenerateResult after = TDM_TRY(generate(runner, nullptr, seq, prompt, gp, {}));
            matched = matched && after.tokens == plain.tokens;  // greedy decoding twice: the same tokens
            pe = 0.5 * (pe + after.stats.prefill_ms + after.stats.decode_ms);
            plain_dec = 0.5 * (plain_dec + after.stats.decode_ms);
            bracket_j = {{"plain_tpot_ms_before", tpot(plain)}, {"plain_tpot_ms_after", tpot(after)}};
        }
        all_matched = all_matched && matched;
        const double se = sr.gen.stats.prefill_ms + sr.gen.stats.decode_ms;
        plain_ms += pe;
        spec_ms += se;
        plain_dec_ms += plain_dec;
        spec_dec_ms += sr.gen.stats.decode_ms;
        plain_tokens += plain.tokens.size();
        spec_tokens += sr.gen.tokens.size();
        total.rounds += sr.stats.rounds;
        total.plain_steps += sr.stats.plain_steps;
        total.drafted += sr.stats.drafted;
        total.accepted += sr.stats.accepted;
        total.emitted += sr.stats.emitted;
        total.verify_ms += sr.stats.verify_ms;
        total.draft_ms += sr.stats.draft_ms;
        total.plain_ms += sr.stats.plain_ms;
        total.accept_ms += sr.stats.accept_ms;
        total.plain_accept_ms += sr.stats.plain_accept_ms;
        total.controller.add(sr.stats.controller);
        total.tree_rounds += sr.stats.tree_rounds;
        total.tree_nodes += sr.stats.tree_nodes;
        total.tree_chains_chosen += sr.stats.tree_chains_chosen;
        if (total.tree_depths.size() < sr.stats.tree_depths.size()) total.tree_depths.resize(sr.stats.tree_depths.size(), 0);
        for (size_t d = 0; d < sr.stats.tree_depths.size(); ++d) total.tree_depths[d] += sr.stats.tree_depths[d];
        if (total.drafted_at.size() < sr.stats.drafted_at.size()) {
            total.drafted_at.resize(sr.stats.drafted_at.size(), 0);
            total.accepted_at.resize(sr.stats.drafted_at.size(), 0);
        }
        for (size_t k = 0; k < sr.stats.drafted_at.size(); ++k) {
            total.drafted_at[k] += sr.stats.drafted_at[k];
            total.accepted_at[k] += sr.stats.accepted_at[k];
        }
        if (total.drafters.empty()) total.drafters = sr.stats.drafters;
        else
            for (size_t k = 0; k < total.drafters.size() && k < sr.stats.drafters.size(); ++k) {
                DrafterStats& t = total.drafters[k];
                const DrafterStats& d = sr.stats.drafters[k];
                t.calls_begin += d.calls_begin;
                t.calls_gen += d.calls_gen;
                t.calls_acc += d.calls_acc;
                t.gen_drafts += d.gen_drafts;
                t.acc_drafts += d.acc_drafts;
                t.gen_tokens += d.gen_tokens;
                t.acc_tokens += d.acc_tokens;
                t.dur_begin_ms += d.dur_begin_ms;
                t.dur_gen_ms += d.dur_gen_ms;
                t.dur_acc_ms += d.dur_acc_ms;
            }
        nlohmann::json pj = {{"prompt", i},
                             {"matched", matched},
                             {"acceptance_rate", sr.stats.acceptance_rate()},
                             {"tokens_per_target_pass", sr.stats.tokens_per_target_pass()},
                             {"plain_tpot_ms", plain_dec / double(std::max<size_t>(1, plain.tokens.size()))},
                             {"spec_tpot_ms", tpot(sr.gen)},
                             {"speedup_e2e", se > 0 ? pe / se : 0},
                             {"speedup_decode", sr.gen.stats.decode_ms > 0 ? plain_dec / sr.gen.stats.decode_ms : 0}};
        if (bracket) pj.update(bracket_j);
        if (const auto own = own_plain_speedup(sr); own.speedup > 0) {
            pj["own_plain_step_ms"] = own.plain_step_ms;
            pj["speedup_vs_own_plain_steps"] = own.speedup;
            own_plain_ms += own.plain_ms;
            own_spent_ms += own.spent_ms;
            ++own_prompts;
        }
        prompts.push_back(std::move(pj));
    }
    // verify cost: T_verify(k+1) / T_decode(1), from the measured rounds
    const double t_plain_step = plain_dec_ms / std::max<uint64_t>(1, plain_tokens);
    const double t_verify = total.rounds ? total.verify_ms / double(total.rounds) : 0;
    nlohmann::json j;
    j["model"] = cfg.model.path;
    j["device"] = dev->caps().name;
    j["drafter"] = force ? (chain.order.empty() ? fmt::format("forced(A={})", *force)
                                                : fmt::format("{} forced(A={})", chain.order[0]->name(), *force))
                         : std::string(chain.order[0]->name());
    j["draft_max"] = sp.draft_max;
    j["auto"] = sp.auto_k;
    j["bracket"] = bracket;
    j["prompts"] = n_prompts;
    j["prompt_kind"] = kind;
    j["prompt_len"] = bench_prompts.empty() ? plen : uint32_t(bench_prompts[0].size());
    j["gen_tokens"] = gen;
    j["matched"] = all_matched;
    j["acceptance_rate"] = total.acceptance_rate();
    j["mean_accepted_length"] = total.mean_accepted_length();
    j["tokens_per_target_pass"] = total.tokens_per_target_pass();
    j["plain_tpot_ms"] = t_plain_step;
    j["spec_tpot_ms"] = spec_dec_ms / std::max<uint64_t>(1, spec_tokens);
    j["plain_tokens_per_s"] = plain_dec_ms > 0 ? plain_tokens / (plain_dec_ms / 1e3) : 0;
    j["spec_tokens_per_s"] = spec_dec_ms > 0 ? spec_tokens / (spec_dec_ms / 1e3) : 0;
    j["speedup_e2e"] = spec_ms > 0 ? plain_ms / spec_ms : 0;
    j["speedup_decode"] = spec_dec_ms > 0 ? plain_dec_ms / spec_dec_ms : 0;
    if (own_prompts > 0) {
        j["speedup_vs_own_plain_steps"] = own_plain_ms / own_spent_ms;
        j["own_plain_prompts"] = own_prompts;
    }
    j["verify_ms_per_round"] = t_verify;
    j["verify_over_decode"] = t_plain_step > 0 ? t_verify / t_plain_step : 0;
    // drafting cost over a plain step: per drafted token (a head's chained step) and per
    // round (a block drafter's one pass, which drafts the whole round)
    const double draft_per_token = total.drafted ? total.draft_ms / double(total.drafted) : 0;
    const double draft_per_round = total.rounds ? total.draft_ms / double(total.rounds) : 0;
    j["draft_token_over_decode"] = t_plain_step > 0 ? draft_per_token / t_plain_step : 0;
    j["draft_round_over_decode"] = t_plain_step > 0 ? draft_per_round / t_plain_step : 0;
    j["spec"] = total.json();
    if (head) j["draft_vocab_rounds"] = vocab_rounds_json(head->rounds_by_vocab(), vocab_before);
    j["per_prompt"] = prompts;
    if (a.flag("json")) {
        std::printf("%s\n", j.dump(2).c_str());
    } else {
        std::printf("prompts=%d matched=%s%s\n", n_prompts, all_matched ? "true" : "false",
                    bracket ? " (plain: the mean of a run before and one after each speculative run)" : "");
        std::printf("acceptance_rate=%.4f mean_accepted_length=%.3f tokens_per_target_pass=%.3f\n",
                    total.acceptance_rate(), total.mean_accepted_length(), total.tokens_per_target_pass());
        std::printf("plain: tpot %.2f ms, %.2f tok/s | spec: tpot %.2f ms, %.2f tok/s\n", t_plain_step,
                    j["plain_tokens_per_s"].get<double>(), j["spec_tpot_ms"].get<double>(),
                    j["spec_tokens_per_s"].get<double>());
        std::printf("speedup_e2e=%.3f speedup_decode=%.3f verify/decode=%.3f\n", j["speedup_e2e"].get<double>(),
                    j["speedup_decode"].get<double>(), j["verify_over_decode"].get<double>());
        std::printf("draft/decode: %.3f per drafted token, %.3f per round\n", j["draft_token_over_decode"].get<double>(),
                    j["draft_round_over_decode"].get<double>());
        if (own_prompts > 0)
            std::printf("speedup against the speculative runs' own plain steps: %.3f (%d of %d prompts)\n",
                        j["speedup_vs_own_plain_steps"].get<double>(), own_prompts, n_prompts);
        std::printf("%s", total.report().c_str());
        if (head) std::printf("draft vocabulary per round: %s\n", j["draft_vocab_rounds"].dump().c_str());
    }
    if (!all_matched) return Error("speculative output differed from plain decoding (matched=false)");
    return {};
}

}  // namespace

Status cmd_bench(App& app) {
    const auto& pos = app.args().positionals();
    const std::string what = pos.empty() ? "" : pos[0];
    if ((what == "ops" || what == "decode" || what == "serve" || what == "image") && app.args().flag("bracket"))
        return Error::format("bench {}: --bracket brackets `bench spec`'s speculative runs (bench serve: --vs-plain)",
                             what);
    if (what == "image") return bench_image(app);
    if (pos.size() > 1)
        return Error::format("bench {}: unexpected argument '{}' (only `bench image` takes files)", what, pos[1]);
    if (what == "ops") return bench_ops(app);
    if (what == "decode") return bench_decode(app);
    if (what == "spec") return bench_spec(app);
    if (what == "serve") return bench_serve(app);
    return Error::format("bench: unknown benchmark '{}' (ops, decode, spec, serve, image)", what);
}

}  // namespace tdm::cli
