// SPDX-License-Identifier: Apache-2.0
// host/model/encoder.cpp
#include "model/encoder.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "common/log.h"
#include "plugin/abi_structs.h"
#include "plugin/handles.h"

namespace tdm {
namespace {

constexpr size_t kGraphCacheLimit = 4;  // page after page of one document mostly shares a grid

double since_ms(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

Status check_info(const tdm_encoder_info& i, const char* name, uint32_t target_embd, uint32_t n_vocab) {
    auto bad = [&](std::string_view what) { return Error::format("encoder {}: {}", name, what); };
    if (i.n_embd != target_embd)
        return Error::format("encoder {}: its rows are {} wide, the target's embeddings {}: an encoder for another "
                             "model",
                             name, i.n_embd, target_embd);
    if (i.patch_size == 0 || i.patch_size > 64) return bad("patch_size must be 1..64");
    if (i.merge_size == 0 || i.merge_size > 8) return bad("merge_size must be 1..8");
    if (i.temporal_patch == 0 || i.temporal_patch > 8) return bad("temporal_patch must be 1..8");
    if (i.in_channels != 3) return bad("only RGB encoders (in_channels 3) are supported");
    if (i.image_token < 0 || uint32_t(i.image_token) >= n_vocab) return bad("its image token is outside the vocabulary");
    for (int32_t t : {i.image_begin_token, i.image_end_token})
        if (t < -1 || t >= int32_t(n_vocab)) return bad("an image begin/end token is outside the vocabulary");
    for (int c = 0; c < 3; ++c)
        if (!(i.image_std[c] > 0.0f)) return bad("image_std must be positive");
    if (i.max_pixels && i.min_pixels > i.max_pixels) return bad("min_pixels exceeds max_pixels");
    const uint64_t most = uint64_t(Encoder::kMaxPatches) * i.patch_size * i.patch_size;
    if (i.max_pixels > most || i.min_pixels > most) return bad("its pixel budget exceeds the patches an image may have");
    return {};
}

// Ids the encoder gives by text only (an mmproj file holds no vocabulary): the target's.
Status resolve_token_texts(tdm_encoder_info& i, const char* name, const Model& target) {
    auto resolve = [&](int32_t* id, const char* text, const char* what) -> Status {
        if (*id >= 0 || !text) return {};
        const std::string t = TDM_TRY(plugin_name(text, fmt::format("encoder {}: {} text", name, what)));
        const Tokenizer* tok = target.tokenizer();
        if (!tok) return Error::format("encoder {}: the target has no tokenizer to find its {} '{}' in", name, what, t);
        *id = tok->token_id(t);
        if (*id < 0)
            return Error::format("encoder {}: the target's vocabulary has no {} '{}': a model for another encoder?",
                                 name, what, t);
        return {};
    };
    TDM_TRY(resolve(&i.image_begin_token, i.image_begin_text, "image begin token"));
    TDM_TRY(resolve(&i.image_token, i.image_text, "image token"));
    TDM_TRY(resolve(&i.image_end_token, i.image_end_text, "image end token"));
    i.image_begin_text = i.image_text = i.image_end_text = nullptr;  // not read past load
    return {};
}

}  // namespace

Result<std::unique_ptr<Encoder>> Encoder::load(const Registry& registry, std::shared_ptr<const ModelSource> source,
                                               const Model& target, vk::Device& device,
                                               vk::PipelineManager& pipelines, bool check_weights) {
    const ArchEntry& arch = target.arch();
    const EncoderEntry* entry = registry.find_encoder(arch.desc->name);
    if (!entry)
        return Error::format("no plugin provides an image encoder for {} models (architecture '{}'); this model takes "
                             "text only",
                             arch.plugin->name, arch.desc->name);
    std::unique_ptr<Encoder> e(new Encoder());
    e->entry_ = entry;
    e->source_ = std::move(source);
    e->src_handle_.src = e->source_.get();
    e->device_ = &device;
    e->pipelines_ = &pipelines;
    e->info_.struct_size = sizeof(tdm_encoder_info);
    void* target_obj = arch.plugin == entry->plugin ? target.plugin_model() : nullptr;
    char err[1024] = {0};
    const tdm_status st = entry->desc->create(host_api(*entry->plugin), &e->src_handle_, target_obj, &e->options_,
                                              &e->info_, &e->obj_, err, sizeof err);
    if (st != TDM_OK || !e->obj_) {
        const std::string why = plugin_message(err, sizeof err, "the encoder refused the file");
        const bool named = why.find(e->source_->path()) != std::string::npos;  // plugins usually name it
        return Error::coded(st == TDM_OK ? TDM_ERR_INTERNAL : st, "{}{}", named ? "" : e->source_->path() + ": ", why);
    }
    e->info_.struct_size = sizeof(tdm_encoder_info);
    TDM_TRY(resolve_token_texts(e->info_, entry->desc->name, target));
    TDM_TRY(check_info(e->info_, entry->desc->name, target.info().n_embd, target.info().n_vocab));
    e->weights_ = std::make_unique<WeightStore>(device, e->source_->path() + " (encoder)", 64ull << 20);
    e->weights_->set_check_weights(check_weights);
    tdm_loader loader{e->weights_.get(), e->source_.get(), &target.weight_store()};
    if (entry->desc->load(e->obj_, &loader, err, sizeof err) != TDM_OK)
        return Error::format("loading encoder {}: {}", entry->desc->name, plugin_message(err, sizeof err, "failed"));
    TDM_LOG_INFO("model", "{}: encoder {} ({}), {} weights, {}", e->source_->path(), entry->desc->name,
                 entry->plugin->name, e->weights_->count(), vk::format_bytes(e->weights_->device_bytes()));
    return e;
}

Encoder::~Encoder() {
    cache_.clear();
    if (obj_ && entry_) entry_->desc->destroy(obj_);
}

Result<Encoder::Compiled*> Encoder::graph(const tdm_encoder_batch& batch) {
    const auto key = std::make_tuple(batch.grid_t, batch.grid_h, batch.grid_w);
    if (auto it = cache_.find(key); it != cache_.end()) {
        it->second.last_used = ++uses_;
        return &it->second;
    }
    if (cache_.size() >= kGraphCacheLimit) {
        auto lru = cache_.begin();
        for (auto it = cache_.begin(); it != cache_.end(); ++it)
            if (it->second.last_used < lru->second.last_used) lru = it;
        cache_.erase(lru);
    }
    auto g = std::make_unique<tdm_graph>();
    g->plugin_abi = entry_->plugin->abi;
    g->plugin_abi_minor = entry_->plugin->abi_minor;
    g->is_encoder = true;
    g->encoder_batch = batch;
    g->patch_values = values_per_patch();
    g->encoder_width = info_.n_embd;
    char err[1024] = {0};
    if (entry_->desc->build_graph(obj_, g.get(), &batch, err, sizeof err) != TDM_OK)
        return Error::format("building encoder {} for a {}x{} patch grid: {}", entry_->desc->name, batch.grid_h,
                             batch.grid_w, plugin_message(err, sizeof err, "failed"));
    if (!g->encoder_rows) return Error::format("encoder {}: its graph sets no rows (graph_set_rows)", entry_->desc->name);
    if (!g->patches) return Error::format("encoder {}: its graph reads no patches", entry_->desc->name);
    Compiled c;
    c.patches = g->patches;
    c.positions = g->patch_positions;
    c.ranges = g->patch_ranges;
    c.rows = g->encoder_rows;
    if (g->graph.tensor(c.rows).kind != TensorKind::activation || !g->graph.tensor(c.rows).contiguous()) {
        OpDesc cp;  // a view cannot be an output
        cp.op = TDM_OP_COPY;
        cp.in[0] = c.rows;
        cp.n_in = 1;
        cp.name = "image_rows";
        c.rows = TDM_TRY(g->graph.op(cp));
    }
    TDM_TRY(g->graph.mark_output(c.rows));
    c.cg = TDM_TRY(CompiledGraph::compile(*device_, *pipelines_, std::move(g->graph)));
    c.last_used = ++uses_;
    auto [it, ok] = cache_.emplace(key, std::move(c));
    return &it->second;
}

Result<EncodedImage> Encoder::encode(std::span<const float> patches, uint32_t grid_t, uint32_t grid_h,
                                     uint32_t grid_w) {
    const uint32_t m = info_.merge_size;
    if (grid_t == 0 || grid_h == 0 || grid_w == 0 || grid_h % m || grid_w % m)
        return Error::format("encoder {}: a {}x{}x{} patch grid is not whole {}x{} merge blocks", name(), grid_t,
                             grid_h, grid_w, m, m);
    const uint64_t n = uint64_t(grid_t) * grid_h * grid_w;
    if (n > kMaxPatches) return Error::format("encoder {}: {} patches in one image is too many", name(), n);
    if (patches.size() != n * values_per_patch())
        return Error::format("encoder {}: {} patch values for {} patches of {}", name(), patches.size(), n,
                             values_per_patch());
    tdm_encoder_batch batch{sizeof(tdm_encoder_batch), uint32_t(n), uint32_t(n / (m * m)), grid_t, grid_h, grid_w};
    Compiled* c = TDM_TRY(graph(batch));
    CompiledGraph& cg = *c->cg;
    std::memcpy(cg.input_data(c->patches), patches.data(), patches.size_bytes());
    if (c->positions) {  // (t, h, w, 0) per patch, in merge-block order
        int32_t* p = cg.input_as<int32_t>(c->positions);
        const uint32_t blocks_w = grid_w / m, frame = grid_h * grid_w;
        for (uint32_t i = 0; i < n; ++i) {
            const uint32_t in_frame = i % frame, block = in_frame / (m * m), inside = in_frame % (m * m);
            p[4 * i] = int32_t(i / frame);
            p[4 * i + 1] = int32_t(block / blocks_w * m + inside / m);
            p[4 * i + 2] = int32_t(block % blocks_w * m + inside % m);
            p[4 * i + 3] = 0;
        }
    }
    if (c->ranges) {  // one image: every patch sees all of them
        int32_t* r = cg.input_as<int32_t>(c->ranges);
        for (uint32_t i = 0; i < n; ++i) {
            r[2 * i] = 0;
            r[2 * i + 1] = int32_t(n);
        }
    }
    EncodedImage out;
    out.n_rows = batch.n_rows;
    out.thw.assign(size_t(out.n_rows) * 3, 0);
    char err[1024] = {0};
    if (entry_->desc->positions(obj_, &batch, out.thw.data(), &out.advance, err, sizeof err) != TDM_OK)
        return Error::format("encoder {}: positions: {}", name(), plugin_message(err, sizeof err, "failed"));
    if (out.advance < 0 || out.advance > int32_t(1u << 24))
        return Error::format("encoder {}: an image advancing positions by {} is implausible", name(), out.advance);
    for (int32_t v : out.thw)
        if (v < 0 || v > int32_t(1u << 24))
            return Error::format("encoder {}: row position offset {} is implausible", name(), v);
    const auto t0 = std::chrono::steady_clock::now();
    TDM_TRY(cg.run());
    out.encode_ms = since_ms(t0);
    const float* rows = cg.output_as<float>(c->rows);
    out.rows.assign(rows, rows + size_t(out.n_rows) * info_.n_embd);
    for (float v : out.rows)
        if (!std::isfinite(v)) return Error::format("encoder {}: the image's rows are not finite", name());
    return out;
}

}  // namespace tdm
