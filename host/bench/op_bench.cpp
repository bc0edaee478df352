// SPDX-License-Identifier: Apache-2.0
// host/bench/op_bench.cpp
#include "bench/op_bench.h"

#include <algorithm>
#include <cstring>
#include <random>

#include "bench/device_bandwidth.h"
#include "bench/run_times.h"
#include "common/quant.h"
#include "graph/executor.h"
#include "graph/weight.h"
#include "ops/matmul_split.h"

namespace tdm {
namespace {

Result<double> median_run_seconds(vk::Device& device, CompiledGraph& cg, int iterations, bool flush) {
    return TDM_TRY(time_runs(device, cg, iterations, flush)).wall_s;
}

Result<double> dispatch_overhead(vk::Device& device, vk::PipelineManager& pipelines, int n_ops) {
    Graph g;
    TensorId x = g.input(DType::F32, {4}, "x");
    for (int i = 0; i < n_ops; ++i) {
        OpDesc d;
        d.op = TDM_OP_SCALE;
        d.in[0] = x;
        d.n_in = 1;
        d.f[0] = 1.0f;
        x = TDM_TRY(g.op(d));
    }
    TDM_TRY(g.mark_output(x));
    auto cg = TDM_TRY(CompiledGraph::compile(device, pipelines, std::move(g)));
    return median_run_seconds(device, *cg, 21, false);
}

// One image's self-attention: q, k, v [head_dim, heads, n], every query over every key.
Result<nlohmann::json> attention_full_run(vk::Device& device, vk::PipelineManager& pipelines,
                                          const OpBenchOptions& opt, int n, std::mt19937& rng) {
    const int64_t hd = opt.attention_head_dim, H = opt.attention_heads;
    Graph g;
    TensorId in[3];
    for (int i = 0; i < 3; ++i) in[i] = g.input(DType::F32, {hd, H, n}, i == 0 ? "q" : i == 1 ? "k" : "v");
    OpDesc d;
    d.op = TDM_OP_ATTENTION_FULL;
    for (int i = 0; i < 3; ++i) d.in[i] = in[i];
    d.n_in = 3;
    const TensorId y = TDM_TRY(g.op(d));
    TDM_TRY(g.mark_output(y));
    auto cg = TDM_TRY(CompiledGraph::compile(device, pipelines, std::move(g)));
    std::normal_distribution<float> nd(0.0f, 1.0f);
    for (TensorId t : in) {
        float* px = cg->input_as<float>(t);
        for (int64_t i = 0; i < hd * H * n; ++i) px[i] = nd(rng);
    }
    const double t = TDM_TRY(median_run_seconds(device, *cg, opt.iterations, false));
    nlohmann::json r;
    r["tokens"] = n;
    r["heads"] = H;
    r["head_dim"] = hd;
    r["ms"] = t * 1e3;
    // q.k and p.v: two multiply-adds per (query, key, head, dim)
    r["gflop_per_s"] = 4.0 * double(n) * double(n) * double(H) * double(hd) / t / 1e9;
    return r;
}

}  // namespace

Result<nlohmann::json> run_op_bench(vk::Device& device, vk::PipelineManager& pipelines, const OpBenchOptions& opt) {
    nlohmann::json out;
    out["device"] = device.caps().name;
    out["weight_path"] = device.caps().prefer_texel_weights ? "texel" : "storage";
    out["matrix"] = {opt.rows, opt.cols};

    const double t1 = TDM_TRY(dispatch_overhead(device, pipelines, 1));
    const double t101 = TDM_TRY(dispatch_overhead(device, pipelines, 101));
    out["dispatch_overhead_us"] = (t101 - t1) / 100.0 * 1e6;
    out["empty_graph_run_us"] = t1 * 1e6;
    const DeviceCopyBandwidth copy = TDM_TRY(measure_device_copy_bandwidth(device));
    out["device_copy"] = {{"buffer_bytes", copy.buffer_bytes}, {"copy_ms", copy.copy_ms}, {"gb_per_s", copy.gb_per_s}};
    const double copy_gb_s = copy.gb_per_s;

    std::mt19937 rng(42);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    std::vector<float> wf(size_t(opt.rows * opt.cols));
    for (float& v : wf) v = nd(rng);

    nlohmann::json results = nlohmann::json::array();
    for (const std::string& tname : opt.types) {
        DType type;
        if (!parse_dtype(tname, &type)) return Error::format("bench: unknown weight type '{}'", tname);
        const std::vector<uint8_t> bytes = quantize_matrix(type, wf.data(), opt.rows, opt.cols);
        vk::Arena arena(device, vk::MemoryKind::device, "bench weights", 64ull << 20);
        const int64_t ne[4] = {opt.cols, opt.rows, 1, 1};
        auto w = TDM_TRY(DeviceWeight::upload(device, arena, "W", type, ne, bytes.data()));
        const double wbytes = double(w->device_bytes());
        double t_single = 0;
        for (int n : opt.batches) {
            Graph g;
            const TensorId x = g.input(DType::F32, {opt.cols, n}, "x");
            OpDesc d;
            d.op = TDM_OP_MATMUL;
            d.in[0] = g.weight(w.get());
            d.in[1] = x;
            d.n_in = 2;
            const TensorId y = TDM_TRY(g.op(d));
            TDM_TRY(g.mark_output(y));
            auto cg = TDM_TRY(CompiledGraph::compile(device, pipelines, std::move(g)));
            float* px = cg->input_as<float>(x);
            for (int64_t i = 0; i < opt.cols * n; ++i) px[i] = nd(rng);
            const RunTimes times = TDM_TRY(time_runs(device, *cg, opt.iterations, opt.flush_cache));
            const double t = times.wall_s;
            if (n == 1) t_single = t;
            nlohmann::json r;
            r["type"] = tname;
            r["batch"] = n;
            // which kernel and work split ran (docs/TUNING.md): layouts differ by device and type
            r["kernel"] = matmul_split_key(device.caps(), *w);
            r["split"] = matmul_split(device.caps(), pipelines.work_splits(), *w).to_string();
            r["ms"] = t * 1e3;
            r["weight_bytes"] = wbytes;
            r["gb_per_s"] = wbytes / t / 1e9;
            r["ms_per_token"] = t * 1e3 / n;
            if (t_single > 0) r["n_x_single_over_batch"] = double(n) * t_single / t;
            if (times.gpu_s > 0) {
                r["gpu_ms"] = times.gpu_s * 1e3;
                r["gpu_gb_per_s"] = wbytes / times.gpu_s / 1e9;
                if (copy_gb_s > 0) r["fraction_of_copy_bandwidth"] = wbytes / times.gpu_s / 1e9 / copy_gb_s;
            }
            results.push_back(r);
        }
    }
    out["matmul"] = results;
    nlohmann::json attention = nlohmann::json::array();
    for (int n : opt.attention_tokens) attention.push_back(TDM_TRY(attention_full_run(device, pipelines, opt, n, rng)));
    if (!opt.attention_tokens.empty()) out["attention_full"] = attention;
    return out;
}

}  // namespace tdm
