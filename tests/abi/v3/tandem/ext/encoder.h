/* SPDX-License-Identifier: Apache-2.0 */
/* tandem/ext/encoder.h: extension "tdm.encoder", version 1 (ABI 3).
 *
 * An encoder turns an image into rows of a language model's embedding space
 * (a vision tower and its projector: GLM-OCR's ViT, a third party's CLIP).
 * A plugin registers one during init; the host then
 *   1. decodes and resizes the image and cuts it into patches, in the layout
 *      the encoder's info describes (merge blocks of merge x merge patches,
 *      block after block, row-major; inside a block row-major; each patch
 *      3 x temporal x patch x patch values ordered (channel, frame, y, x),
 *      normalised with the info's mean and std);
 *   2. runs the encoder's graph over the patches of one image: inputs are the
 *      patches, each patch's (t, h, w) place in its image's patch grid and the
 *      [begin, end) patch range of its image; the output is one row per merge
 *      block, n_embd wide;
 *   3. puts those rows in place of the image's placeholder tokens in the
 *      prompt: a target model asks for them with inject_rows in build_graph;
 *   4. gives the placeholder rows the rotary positions the encoder's
 *      positions callback returns, and the text after the image positions
 *      that continue past the image (TDM_INPUT_POSITIONS_4), while KV slots
 *      stay token indices.
 *
 *     const tdm_ext_encoder* enc = host->get_extension(TDM_EXT_ENCODER, 1, NULL);
 *     // init: enc->register_encoder(reg, &my_encoder_desc);
 *     // the target's build_graph, after the token embeddings:
 *     if (enc) st = enc->inject_rows(g, x, &x);  // x unchanged in batches without image rows
 *
 * Batches with image rows and batches without are different graphs: a text
 * batch pays nothing. A target whose graph never calls inject_rows cannot take
 * images (the host says so). Draft heads see placeholder tokens as tokens and
 * text positions: they only propose, the target verifies, so speculation stays
 * exact. */
#ifndef TANDEM_EXT_ENCODER_H
#define TANDEM_EXT_ENCODER_H

#include "../graph.h"
#include "../tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TDM_EXT_ENCODER "tdm.encoder"
#define TDM_EXT_ENCODER_VERSION 1u

/* What the host needs to prepare an image for the encoder. Filled by create
 * (struct_size set by the host, the rest zero). */
typedef struct tdm_encoder_info {
    uint32_t struct_size;
    uint32_t n_embd;           /* width of each output row: the target's n_embd */
    uint32_t patch_size;       /* pixels per patch side (GLM-OCR 14) */
    uint32_t merge_size;       /* patches per side of the block one row covers (2) */
    uint32_t temporal_patch;   /* frames per patch; a still image repeats itself (2) */
    uint32_t in_channels;      /* 3 (RGB) */
    /* Pixel budget of a resized image (both sides multiples of patch * merge):
     * at least min_pixels, at most max_pixels. 0: the host's default (HF
     * preprocessor_config.json beside the weights overrides both). */
    uint64_t min_pixels, max_pixels;
    float image_mean[3], image_std[3];  /* per channel, on values scaled to [0, 1] */
    /* Token ids around an image in the prompt: begin, placeholder (one per
     * output row), end. The placeholder is required; begin/end -1 if none. */
    int32_t image_begin_token, image_token, image_end_token;
    /* Their texts, for a source that does not hold the ids (an mmproj file): where an
     * id above is -1 and its text is set, the host takes that text's id in the target's
     * vocabulary. NULL: none. Static storage or the encoder object's, until destroy. */
    const char* image_begin_text;
    const char* image_text;
    const char* image_end_text;
} tdm_encoder_info;

/* One encoder graph: the patches of one image. */
typedef struct tdm_encoder_batch {
    uint32_t struct_size;
    uint32_t n_patches;   /* grid_t * grid_h * grid_w */
    uint32_t n_rows;      /* output rows: n_patches / merge_size^2 */
    uint32_t grid_t, grid_h, grid_w;  /* the image's patch grid */
} tdm_encoder_batch;

typedef struct tdm_encoder_desc {
    uint32_t struct_size;
    const char* name;                  /* "glm-ocr-vision" */
    /* NULL-terminated architecture names (tdm_arch_desc.name) whose models it
     * feeds, e.g. "glm4". */
    const char* const* target_archs;
    /* `src` holds the encoder's weights: the target's own source (an HF
     * directory with the tower inside) or a side file (--mmproj). `target` is
     * the target's model object when it is of this plugin (else NULL); it
     * outlives the encoder. Fails with TDM_ERR_NOT_FOUND and a message saying
     * where to get the weights when `src` has none. */
    tdm_status (*create)(const tdm_host_api* host, const tdm_model_source* src, void* target,
                         const tdm_options* options, tdm_encoder_info* info, void** encoder, char* err,
                         size_t err_size);
    tdm_status (*load)(void* encoder, tdm_loader* loader, char* err, size_t err_size);
    /* The forward over one image: read the patches through graph_patches (and
     * graph_patch_positions / graph_patch_ranges as needed), set the rows with
     * graph_set_rows. */
    tdm_status (*build_graph)(void* encoder, tdm_graph* g, const tdm_encoder_batch* batch, char* err,
                              size_t err_size);
    /* The rotary position of each output row relative to the image's first
     * position p: thw[3 r + 0..2] = (t, h, w) offsets of row r, written for
     * batch->n_rows rows; *advance = how far p moves past the image (the next
     * text token sits at p + advance). GLM-4V: (0, row, col) over the merged grid,
     * advance max(grid_h, grid_w) / merge_size. */
    tdm_status (*positions)(void* encoder, const tdm_encoder_batch* batch, int32_t* thw, int32_t* advance, char* err,
                            size_t err_size);
    void (*destroy)(void* encoder);
} tdm_encoder_desc;

typedef struct tdm_ext_encoder {
    uint32_t struct_size;
    /* Registers an encoder. [init] Copies the descriptor; its strings and
     * functions live until shutdown(). */
    tdm_status (*register_encoder)(tdm_registry* reg, const tdm_encoder_desc* desc);
    /* A weight of values the plugin computes (rope frequency divisors, ...):
     * F32 [ne0, ne1], copied. [callback: an encoder's or model's load] */
    tdm_status (*load_f32)(tdm_loader* loader, const char* name, const float* values, int64_t ne0, int64_t ne1,
                           const tdm_weight** out);

    /* ---- encoder graphs [callback: tdm_encoder_desc.build_graph] ---- */
    /* F32 [values per patch, n_patches]: the normalised patches. */
    tdm_status (*graph_patches)(tdm_graph* g, tdm_tensor* out);
    /* I32 [4, n_patches]: (t, h, w, 0) of each patch in its image's patch grid,
     * the position input of TDM_OP_ROPE with sections. */
    tdm_status (*graph_patch_positions)(tdm_graph* g, tdm_tensor* out);
    /* I32 [2, n_patches]: [begin, end) patches of each patch's image, the
     * ranges input of TDM_OP_ATTENTION_FULL. */
    tdm_status (*graph_patch_ranges)(tdm_graph* g, tdm_tensor* out);
    /* The result: F32 [n_embd, n_rows]. */
    tdm_status (*graph_set_rows)(tdm_graph* g, tdm_tensor rows);

    /* ---- target graphs [callback: tdm_arch_desc.build_graph] ---- */
    /* `x` F32 [n_embd, n_tokens] (the token embeddings) with the rows of
     * placeholder tokens replaced by image rows: x * keep + rows, keep a 0/1
     * column the host fills. In a batch without image rows *out = x, no op. */
    tdm_status (*inject_rows)(tdm_graph* g, tdm_tensor x, tdm_tensor* out);
} tdm_ext_encoder;

/* Builder form: x with the batch's image rows in place (x itself without the
 * extension: an older host, which never sends image rows). */
static inline tdm_tensor tdm_inject_rows(tdm_builder* b, const tdm_ext_encoder* ext, tdm_tensor x) {
    tdm_tensor t = {0};
    if (b->status != TDM_OK) return t;
    if (!ext) return x;
    tdm_status st = ext->inject_rows(b->g, x, &t);
    return st == TDM_OK ? t : tdm_fail_(b, st, "inject_rows");
}

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_EXT_ENCODER_H */
