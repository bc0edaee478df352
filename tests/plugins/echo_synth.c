/* SPDX-License-Identifier: Apache-2.0 */
/* tests/plugins/echo_synth.c: a synthesizer (tandem/synth.h) in plain C99 for the CLI tests. It
   writes architecture "qwen3" only, and its "model" is the request as text, one line each:
   "arch=A", "output=PATH", then "NAME=VALUE" per option in the order received, so a test can
   check exactly what `tandem synth` passed. Built twice: as is (test-synth-echo), and with
   ECHO_SYNTH_VERSION=7 (test-synth-v7: speaks only versions 7..9, which a host must refuse). */
#include <stdio.h>
#include <tandem/synth.h>

#ifndef ECHO_SYNTH_VERSION
#define ECHO_SYNTH_VERSION 1
#endif

static void message(char* m, size_t n, const char* text, const char* arg) {
    if (m && n) snprintf(m, n, text, arg);
}

static tdm_status synthesize(const tdm_synth_request* r, char* m, size_t n) {
    FILE* f;
    uint32_t i;
    if (!r || r->struct_size < TDM_SYNTH_V1_SIZEOF_REQUEST || !r->arch || !r->output) {
        message(m, n, "echo synth: bad request%s", "");
        return TDM_ERR_INVALID_ARGUMENT;
    }
    f = fopen(r->output, "w");
    if (!f) {
        message(m, n, "echo synth: cannot write %s", r->output);
        return TDM_ERR_INVALID_ARGUMENT;
    }
    fprintf(f, "arch=%s\noutput=%s\n", r->arch, r->output);
    for (i = 0; i < r->n_options; ++i) fprintf(f, "%s=%s\n", r->option_names[i], r->option_values[i]);
    fclose(f);
    message(m, n, "echoed the request to %s", r->output);
    return TDM_OK;
}

static const char* const kArchs[] = {"qwen3", 0};
static const tdm_synthesizer_api kApi = {sizeof(tdm_synthesizer_api), "echo", "the request as text", kArchs,
                                         synthesize};

TDM_PLUGIN_EXPORT tdm_status tdm_synthesizer_negotiate(tdm_synth_negotiate* n) {
    return tdm_synth_negotiate_range(n, &kApi, ECHO_SYNTH_VERSION, ECHO_SYNTH_VERSION + 2);
}
