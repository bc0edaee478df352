// SPDX-License-Identifier: Apache-2.0
// host/cli/cmd_tune.cpp: `tandem tune`: measure the fastest matmul work split per weight
// shape on this device and keep it in the device's work-split table
// (bench/matmul_tune.h). Also: the automatic tuning at a model's first load on a GPU.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include <nlohmann/json.hpp>

#include "bench/matmul_tune.h"
#include "cli/commands.h"
#include "common/log.h"

namespace tdm::cli {
namespace {

// Shapes tuned when neither a model nor --matrix names any: the projections of the
// common decode shapes (0.6B to 8B class: hidden 1024 to 4096, their MLPs and a 152k
// vocabulary) and the 31B-class stand-ins `tandem bench ops` and the GPU sitting time.
const int64_t kDefaultShapes[][2] = {{1024, 1024},  {2048, 1024},  {3072, 1024},  {1024, 3072},
                                     {4096, 4096},  {14336, 4096}, {4096, 14336}, {151936, 1024},
                                     {21504, 5376}, {5376, 21504}};

Result<std::vector<MatmulShape>> shapes_from_options(const ParsedArgs& a) {
    std::vector<DType> types;
    std::istringstream ts(a.get_string("types").value_or("q8_0,q4_K"));
    for (std::string t; std::getline(ts, t, ',');) {
        DType d;
        if (!parse_dtype(t, &d)) return Error::format("--types: unknown weight type '{}'", t);
        types.push_back(d);
    }
    std::vector<std::pair<int64_t, int64_t>> dims;
    if (auto m = a.get_string("matrix")) {
        std::istringstream ms(*m);
        for (std::string one; std::getline(ms, one, ',');) {
            long long rows = 0, cols = 0;
            char x = 0, extra = 0;
            if (std::sscanf(one.c_str(), "%lld%c%lld%c", &rows, &x, &cols, &extra) != 3 || x != 'x' || rows < 1 ||
                cols < 256 || cols % 256 || rows > (1 << 20) || cols > (1 << 16))
                return Error::format("--matrix '{}': give ROWSxCOLS[,ROWSxCOLS...], COLS a multiple of 256 "
                                     "(e.g. 6144x1024)", one);
            dims.emplace_back(rows, cols);
        }
    } else {
        for (const auto& d : kDefaultShapes) dims.emplace_back(d[0], d[1]);
    }
    std::vector<MatmulShape> out;
    for (DType t : types)
        for (const auto& [r, c] : dims) out.push_back({t, r, c});
    return out;
}

// --splits ROWSxSUBGROUPS[uUNROLL],...: the layout is each shape's own (the unroll counts in
// "mv" only; without one, "mv" takes its default; 0 here stands for that).
Result<std::vector<MatmulSplit>> splits_from_option(const ParsedArgs& a, const vk::DeviceCaps& caps) {
    std::vector<MatmulSplit> out;
    const auto s = a.get_string("splits");
    if (!s) return out;
    std::istringstream in(*s);
    for (std::string one; std::getline(in, one, ',');) {
        unsigned rows = 0, groups = 0, unroll = 0;
        char x = 0, u = 0, extra = 0;
        const int n = std::sscanf(one.c_str(), "%u%c%u%c%u%c", &rows, &x, &groups, &u, &unroll, &extra);
        MatmulSplit m{MatmulLayout::mv, 0, 0, 0};
        if ((n == 3 || (n == 5 && u == 'u' && unroll > 0)) && x == 'x') m = {MatmulLayout::mv, rows, groups, unroll};
        if (!matmul_split_fits(caps, {m.layout, m.rows, m.subgroups, std::max(1u, m.unroll)}))
            return Error::format("--splits '{}': give ROWSxSUBGROUPS[uUNROLL][,...] with 1-16 rows, an unroll of 1-8 "
                                 "and a workgroup of at most {} lanes (e.g. 1x4,2x4u2)", one,
                                 caps.max_workgroup_invocations);
        out.push_back(m);
    }
    return out;
}

void print_table(const nlohmann::json& j) {
    std::printf("device: %s (timing: %s)\ntable: %s\n", j["device"].get<std::string>().c_str(),
                j["timing"].get<std::string>().c_str(),
                j["table"].get<std::string>().empty() ? "(not saved: no cache directory)"
                                                      : j["table"].get<std::string>().c_str());
    std::printf("%-28s %-16s %7s %7s %10s %10s %8s %8s\n", "kernel", "shape", "split", "default", "us", "default us",
                "speedup", "GB/s");
    for (const auto& r : j["shapes"]) {
        const std::string key = r["key"].get<std::string>();
        const size_t sp = key.find(' ');
        const std::string kernel = key.substr(0, sp), shape = sp == std::string::npos ? "" : key.substr(sp + 1);
        if (r["status"] == "cached") {
            std::printf("%-28s %-16s %7s %7s %10s (tuned before; --retune measures again)\n", kernel.c_str(),
                        shape.c_str(), r["split"].get<std::string>().c_str(), "", "");
            continue;
        }
        std::printf("%-28s %-16s %7s %7s %10.2f %10.2f %8.2f %8.1f\n", kernel.c_str(), shape.c_str(),
                    r["split"].get<std::string>().c_str(), r["default_split"].get<std::string>().c_str(),
                    r["us"].get<double>(), r.value("default_us", 0.0), r.value("speedup", 1.0),
                    r["gb_per_s"].get<double>());
    }
}

// "\rtuning matmul work splits: 3/10" on a terminal.
std::function<void(size_t, size_t)> progress_line(const char* what) {
    if (!isatty(fileno(stderr))) return {};
    return [what](size_t done, size_t total) {
        std::fprintf(stderr, "\r%s: %zu/%zu shapes%s", what, done, total, done == total ? "\r\033[K" : "");
    };
}

}  // namespace

Status cmd_tune(App& app) {
    const ParsedArgs& a = app.args();
    app.config().device.tune = false;  // a model loaded for its shapes is tuned below, with these options
    vk::Device* dev = TDM_TRY(app.device());
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    MatmulTuneOptions opt;
    opt.retune = a.flag("retune");
    opt.iterations = int(a.get_int("iterations").value_or(7));
    opt.candidates = TDM_TRY(splits_from_option(a, dev->caps()));
    opt.progress = progress_line("tuning matmul work splits");
    std::vector<MatmulShape> shapes;
    std::unique_ptr<Model> model;
    if (!app.config().model.path.empty() && !a.get_string("matrix")) {
        model = TDM_TRY(app.load_model(app.config().model.path));
        shapes = matmul_shapes(model->weight_store().all());
    } else {
        shapes = TDM_TRY(shapes_from_options(a));
    }
    const nlohmann::json j = TDM_TRY(tune_matmuls(*dev, *pm, shapes, opt));
    if (a.flag("json"))
        std::printf("%s\n", j.dump(2).c_str());
    else
        print_table(j);
    return {};
}

Status tune_model_at_first_load(App& app, const Model& model) {
    vk::Device* dev = TDM_TRY(app.device());
    if (!app.config().device.tune || dev->caps().is_cpu()) return {};
    vk::PipelineManager* pm = TDM_TRY(app.pipelines());
    std::vector<const DeviceWeight*> untuned;
    for (const DeviceWeight* w : model.weight_store().all())
        if (matmul_tunable(*w) && !pm->work_splits().find(matmul_split_key(dev->caps(), *w))) untuned.push_back(w);
    const std::vector<MatmulShape> todo = matmul_shapes(untuned);
    if (todo.empty()) return {};
    MatmulTuneOptions opt;
    opt.progress = progress_line("tuning matmul work splits for this GPU (once; --no-tune skips)");
    auto j = tune_matmuls(*dev, *pm, todo, opt);
    if (!j.ok()) TDM_LOG_WARN("tune", "{}; the default work splits are used", j.error().message());
    return {};
}

}  // namespace tdm::cli
