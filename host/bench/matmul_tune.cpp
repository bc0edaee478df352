// SPDX-License-Identifier: Apache-2.0
// host/bench/matmul_tune.cpp: timing the matmul work splits (matmul_tune.h).
#include "bench/matmul_tune.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <set>
#include <tuple>

#include "bench/run_times.h"
#include "common/quant.h"
#include "graph/executor.h"

namespace tdm {
namespace {

struct Timed {
    double us = 0;             // one matmul's time
    std::vector<float> first;  // the first copy's output, to compare bits
};

// One candidate: a graph of `weights.size()` batch-1 matmuls of the same x, timed.
Result<Timed> time_split(vk::Device& device, vk::PipelineManager& pipelines,
                         std::span<const std::unique_ptr<DeviceWeight>> weights, const std::vector<float>& x,
                         int iterations) {
    const int64_t cols = weights[0]->cols(), rows = weights[0]->rows();
    Graph g;
    const TensorId xt = g.input(DType::F32, {cols, 1}, "x");
    std::vector<TensorId> ys;
    for (const auto& w : weights) {
        OpDesc d;
        d.op = TDM_OP_MATMUL;
        d.in[0] = g.weight(w.get());
        d.in[1] = xt;
        d.n_in = 2;
        ys.push_back(TDM_TRY(g.op(d)));
        TDM_TRY(g.mark_output(ys.back()));
    }
    auto cg = TDM_TRY(CompiledGraph::compile(device, pipelines, std::move(g)));
    std::memcpy(cg->input_as<float>(xt), x.data(), x.size() * sizeof(float));
    const RunTimes times = TDM_TRY(time_runs(device, *cg, iterations, false));
    Timed t;
    const float* y0 = cg->output_as<float>(ys[0]);  // every run computes the same
    t.first.assign(y0, y0 + rows);
    t.us = (times.gpu_s > 0 ? times.gpu_s : times.wall_s) * 1e6 / double(weights.size());
    return t;
}

// A table entry as its split reads: "2x4", "2x4u2".
std::string split_text(const std::vector<uint32_t>& v) {
    if (v.size() == 2) return fmt::format("{}x{}", v[0], v[1]);
    if (v.size() == 3) return fmt::format("{}x{}u{}", v[0], v[1], v[2]);
    return "?";
}

// The splits timed for `type`: `given` (rows x subgroups [x unroll], 0: the default, in the
// type's layout; the first the reference) if any, else the layout's candidates.
std::vector<MatmulSplit> tune_candidates(const vk::DeviceCaps& caps, DType type,
                                         const std::vector<MatmulSplit>& given) {
    if (given.empty()) return matmul_split_candidates(caps, type);
    const MatmulSplit d = default_matmul_split(caps, type);
    std::vector<MatmulSplit> out;
    for (MatmulSplit s : given) {
        s.layout = d.layout;
        if (d.layout != MatmulLayout::mv)
            s.unroll = 1;
        else if (s.unroll == 0)
            s.unroll = d.unroll;
        if (matmul_split_fits(caps, s) && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
    return out;
}

}  // namespace

bool MatmulShape::operator<(const MatmulShape& o) const {
    return std::tuple(int(type), rows, cols) < std::tuple(int(o.type), o.rows, o.cols);
}

std::vector<MatmulShape> matmul_shapes(std::span<const DeviceWeight* const> weights) {
    std::set<MatmulShape> seen;
    for (const DeviceWeight* w : weights)
        if (w && matmul_tunable(*w)) seen.insert({w->type(), w->rows(), w->cols()});
    return {seen.begin(), seen.end()};
}

Result<nlohmann::json> tune_matmuls(vk::Device& device, vk::PipelineManager& pipelines,
                                    std::span<const MatmulShape> shapes, const MatmulTuneOptions& opt) {
    const vk::DeviceCaps& caps = device.caps();
    vk::WorkSplits& table = pipelines.work_splits();
    nlohmann::json out;
    out["device"] = caps.name;
    out["timing"] = device.profiling() ? "device timestamps" : "wall clock";
    out["table"] = table.path();
    nlohmann::json results = nlohmann::json::array();
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0.0f, 0.05f);
    size_t done = 0;
    for (const MatmulShape& shape : shapes) {
        std::vector<float> wf(size_t(shape.rows * shape.cols));
        for (float& v : wf) v = nd(rng);
        const std::vector<uint8_t> bytes = quantize_matrix(shape.type, wf.data(), shape.rows, shape.cols);
        wf = {};
        vk::Arena arena(device, vk::MemoryKind::device, "tuning weights", 64ull << 20);
        const int64_t ne[4] = {shape.cols, shape.rows, 1, 1};
        std::vector<std::unique_ptr<DeviceWeight>> weights;
        weights.push_back(TDM_TRY(DeviceWeight::upload(device, arena, "W", shape.type, ne, bytes.data())));
        const std::string key = matmul_split_key(caps, *weights[0]);
        const MatmulSplit dflt = default_matmul_split(caps, shape.type);
        const std::vector<MatmulSplit> candidates = tune_candidates(caps, shape.type, opt.candidates);
        nlohmann::json r{{"key", key}, {"type", dtype_name(shape.type)}, {"rows", shape.rows}, {"cols", shape.cols}};
        const std::optional<std::vector<uint32_t>> before = table.find(key);
        if (before && !opt.retune) {
            r["status"] = "cached";
            r["split"] = split_text(*before);
            results.push_back(r);
            if (opt.progress) opt.progress(++done, shapes.size());
            continue;
        }
        const uint64_t wbytes = std::max<uint64_t>(1, weights[0]->device_bytes());
        const uint64_t copies = std::clamp<uint64_t>(opt.bytes_per_run / wbytes, 1, std::max<uint32_t>(1, opt.max_copies));
        for (uint64_t i = 1; i < copies; ++i)
            weights.push_back(TDM_TRY(DeviceWeight::upload(device, arena, "W", shape.type, ne, bytes.data())));
        std::vector<float> x(size_t(shape.cols));
        for (float& v : x) v = nd(rng) * 20.0f;

        nlohmann::json cand = nlohmann::json::array();
        std::vector<float> reference;
        MatmulSplit best = dflt;
        double best_us = 0, default_us = 0;
        Status failed;
        for (const MatmulSplit& s : candidates) {
            table.set(key, s.table_values());
            auto t = time_split(device, pipelines, weights, x, opt.iterations);
            if (!t.ok()) {
                failed = t.error();
                break;
            }
            if (reference.empty()) {
                reference = t->first;
            } else if (std::memcmp(reference.data(), t->first.data(), reference.size() * sizeof(float)) != 0) {
                failed = Error::format("tune: split {} of {} gives other results than split {} (a kernel bug: "
                                       "splits must not change a row's arithmetic)",
                                       s.to_string(), key, candidates.front().to_string());
                break;
            }
            cand.push_back({{"split", s.to_string()}, {"us", t->us}});
            if (s == dflt) default_us = t->us;
            if (best_us == 0 || t->us < best_us) {
                best_us = t->us;
                best = s;
            }
        }
        if (!failed.ok()) {  // leave the table as it was for this shape
            if (before)
                table.set(key, *before);
            else
                table.erase(key);
            return failed.error();
        }
        table.set(key, best.table_values());
        r["status"] = "tuned";
        r["split"] = best.to_string();
        r["default_split"] = dflt.to_string();
        r["copies"] = copies;
        r["us"] = best_us;
        r["gb_per_s"] = double(wbytes) / (best_us * 1e-6) / 1e9;
        if (default_us > 0) {
            r["default_us"] = default_us;
            r["speedup"] = default_us / best_us;
        }
        r["candidates"] = cand;
        results.push_back(r);
        if (opt.progress) opt.progress(++done, shapes.size());
    }
    out["shapes"] = results;
    TDM_TRY(table.save());
    return out;
}

}  // namespace tdm
