/* SPDX-License-Identifier: MIT */
/* tandem/synth.h: synthesizers, interface version 1: a plugin's optional
 * companion that writes synthetic models of the plugin's architectures.
 *
 * `tandem synth --arch X -o PATH` writes a model with random weights in the
 * exact layout of a real file of architecture X (tensor names, metadata,
 * tokenizer), for demos, tests and benchmarks; `tandem demo` writes its models
 * the same way. The code that knows X's layout belongs with the plugin that
 * runs X, but not inside it: every tandem process loads the plugin, while the
 * writers (a tokenizer trainer, GGUF and safetensors writers, quantizers) are
 * needed only to synthesize. So a plugin may ship a second shared object, its
 * synthesizer, which the tandem CLI opens only when it writes a model. Neither
 * the plugin nor libtandem contains synthesis code.
 *
 * Contents
 *   1. Finding and loading a synthesizer
 *   2. Options
 *   3. The request, the table and the entry point
 *   4. The synthesizer contract
 *
 * ---------------------------------------------------------------------------
 * 1. FINDING AND LOADING
 *
 * For a plugin loaded from DIR/tandem-NAME.so, its synthesizer is
 * DIR/synth/tandem-NAME-synth.so (TDM_SYNTH_SUBDIR, TDM_SYNTH_FILE_SUFFIX):
 * the in-tree ones are installed as
 * /usr/lib/<multiarch>/tandem/plugins/synth/tandem-qwen-nextn-synth.so. The
 * plugin loader scans only DIR itself, so the subdirectory keeps synthesizers
 * from being taken for (broken) plugins. `tandem synth --arch X` asks the plugin
 * registry which loaded plugin registers architecture X (its GGUF
 * general.architecture name), or else registers X as the file architecture of
 * a draft head (tdm_draft_head_desc.source_archs, e.g. "gemma4-assistant"),
 * opens that plugin's synthesizer and checks that it lists X; an architecture
 * whose plugin has no synthesizer is an error that names the plugin.
 * `tandem plugins` shows each plugin's synthesizer.
 *
 * The host opens the file with dlopen(RTLD_NOW | RTLD_LOCAL), looks up the one
 * exported symbol, tdm_synthesizer_negotiate (TDM_SYNTH_ENTRY_NAME), and calls
 * it once: the host offers a range of interface versions, the synthesizer
 * answers with the version it speaks and its table, or fails with
 * TDM_ERR_ABI_MISMATCH and its own range. The struct rules are the plugin
 * ABI's (tandem.h, section 1): every struct starts with struct_size, fields are
 * only appended and marked with the version that added them, a reader copies
 * min(struct_size, its sizeof) into a zeroed local, zero means "default / off",
 * and a struct below its v1 size (TDM_SYNTH_V1_SIZEOF_*) is refused.
 *
 * ---------------------------------------------------------------------------
 * 2. OPTIONS
 *
 * A request carries the options of `tandem synth` that the user gave (only
 * those: defaults are the synthesizer's), by the long option name without
 * "--": "preset", "type", "format", "seed", "tied", "mtp", "layers",
 * "draft-of-seed", "perturbation", "repeating", "repeat-period",
 * "residual-decay". Values are text: integers in decimal, other numbers as
 * printf("%.17g") writes them (they read back exactly), booleans and flags
 * "true" or "false". "format" is "gguf" (PATH is a file) or "hf" (PATH is a
 * Hugging Face directory). A synthesizer refuses an option name it does not
 * know and a value it cannot parse, with a message naming the option; it never
 * ignores an unknown name. It may refuse an option that does not apply to the
 * architecture (the in-tree one refuses "mtp" for qwen3).
 * ------------------------------------------------------------------------- */
#ifndef TANDEM_SYNTH_H
#define TANDEM_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "tandem.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest interface version this header describes, and the oldest one a
 * host built from it still speaks. Independent of TDM_ABI_VERSION. */
#define TDM_SYNTH_VERSION 1u
#define TDM_SYNTH_VERSION_MIN 1u

/* Sizes of the version 1 structs (LP64). */
#define TDM_SYNTH_V1_SIZEOF_REQUEST 40u
#define TDM_SYNTH_V1_SIZEOF_API 40u
#define TDM_SYNTH_V1_SIZEOF_NEGOTIATE 32u

/* Where a plugin's synthesizer lives, relative to the plugin's directory, and
 * how its file name derives from the plugin's: tandem-NAME.so ->
 * synth/tandem-NAME-synth.so. */
#define TDM_SYNTH_SUBDIR "synth"
#define TDM_SYNTH_FILE_SUFFIX "-synth.so"

/* Name of the one exported symbol. */
#define TDM_SYNTH_ENTRY_NAME "tdm_synthesizer_negotiate"

/* ---------------------------------------------------------------------------
 * 3. REQUEST, TABLE, ENTRY POINT
 * ------------------------------------------------------------------------- */

/* One model to write. Every pointer is owned by the host and lives for the
 * synthesize() call only. */
typedef struct tdm_synth_request {
    uint32_t struct_size;
    uint32_t n_options;                /* entries of option_names / option_values */
    const char* arch;                  /* one of tdm_synthesizer_api.archs */
    const char* output;                /* the file or directory to write (see "format") */
    const char* const* option_names;   /* n_options names (section 2), each at most once */
    const char* const* option_values;  /* n_options values, as text */
} tdm_synth_request;

typedef struct tdm_synthesizer_api {
    uint32_t struct_size;
    const char* name;         /* the plugin it belongs to: "qwen-nextn" */
    const char* description;  /* one line */
    /* NULL-terminated list of the GGUF architecture names it writes, e.g.
     * {"qwen3", "qwen35", "qwen35moe", NULL}. */
    const char* const* archs;
    /* Writes the model `request` describes. On TDM_OK, `message` receives a
     * one-line summary of what was written (the CLI prints it); on failure,
     * the reason. NUL-terminated, truncated to message_size bytes (the host
     * passes at least 1024). Any failure status is possible; the message is
     * what the user sees. Called from one thread at a time; it may run
     * threads of its own, which have ended when it returns. */
    tdm_status (*synthesize)(const tdm_synth_request* request, char* message, size_t message_size);
} tdm_synthesizer_api;

typedef struct tdm_synth_negotiate {
    uint32_t struct_size;
    uint32_t host_version_min;           /* in */
    uint32_t host_version_max;           /* in */
    uint32_t synth_version;              /* out: the version the synthesizer will speak */
    uint32_t synth_version_min;          /* out: its range (for error messages) */
    uint32_t synth_version_max;          /* out */
    const tdm_synthesizer_api* api;      /* out: static storage, valid until dlclose */
} tdm_synth_negotiate;

typedef tdm_status (*tdm_synthesizer_negotiate_fn)(tdm_synth_negotiate* n);

/* The one symbol a synthesizer defines and exports. Called first and once,
 * from the thread that opened the file. */
TDM_PLUGIN_EXPORT tdm_status tdm_synthesizer_negotiate(tdm_synth_negotiate* n);

/* Convenience for synthesizers: the usual negotiation body (the highest
 * version both sides speak wins). */
static inline tdm_status tdm_synth_negotiate_range(tdm_synth_negotiate* n, const tdm_synthesizer_api* api,
                                                   uint32_t version_min, uint32_t version_max) {
    if (!n || n->struct_size < TDM_SYNTH_V1_SIZEOF_NEGOTIATE) return TDM_ERR_INVALID_ARGUMENT;
    n->synth_version_min = version_min;
    n->synth_version_max = version_max;
    if (n->host_version_min > version_max || n->host_version_max < version_min) return TDM_ERR_ABI_MISMATCH;
    n->synth_version = n->host_version_max < version_max ? n->host_version_max : version_max;
    n->api = api;
    return TDM_OK;
}

/* ---------------------------------------------------------------------------
 * 4. THE SYNTHESIZER CONTRACT
 *
 *  #  Requirement                                             If broken
 *  1  Export only tdm_synthesizer_negotiate                   Symbol clashes with the host and
 *     (-fvisibility=hidden and a version script).             the plugins.
 *  2  Be self-contained: link what you need (statically or    The file does not load, or loads
 *     from system libraries), never libtandem, and do not     a second copy of the runtime.
 *     call into the host.
 *  3  Write only `output` (and, for "hf", files inside it).   Data loss.
 *  4  Refuse unknown option names and unparsable values      A misspelt option silently gives
 *     with a message; never ignore them.                      a different model.
 *  5  Same request, same bytes: output depends only on the    Tests and benchmarks that compare
 *     request, never on the thread count or the time.         files break.
 *  6  Never let a C++ exception cross the interface, never    The host process terminates.
 *     exit() or abort(): return a status and a message.
 * ------------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* TANDEM_SYNTH_H */
