// SPDX-License-Identifier: Apache-2.0
// tests/gemma4/tools/write_assistant.cpp: writes a random-weight Gemma 4 assistant of a REAL
// shape (spec/gemma4.md §3.1) with the test writers (gemma4_tiny_assistant.h), to pair with a
// full-shape target from `tandem synth --arch gemma4 --preset e2b` for benchmarks
// (docs/BENCHMARKS.md). A development tool, built with the tests, not installed.
//
//   gemma4-write-assistant e2b|e4b|26b-a4b|31b OUT.gguf [f32|f16|bf16]
#include <cstdio>
#include <cstring>
#include <string>

#include "../gemma4_tiny_assistant.h"

using namespace tdm;
using namespace tdm::test::g4;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s e2b|e4b|26b-a4b|31b OUT.gguf [f32|f16|bf16]\n", argv[0]);
        return 2;
    }
    const std::string target = argv[1];
    DType type = DType::BF16;
    if (argc > 3) {
        if (!parse_dtype(argv[3], &type) || (type != DType::F32 && type != DType::F16 && type != DType::BF16)) {
            std::fprintf(stderr, "type must be f32, f16 or bf16, got %s\n", argv[3]);
            return 2;
        }
    }
    AssistantPreset ap;
    Preset& d = ap.text;
    d.n_vocab = 262144;
    d.layers = "SSSF";
    d.n_kv_shared = 4;
    d.hd_swa = 256;
    d.hd_full = 512;
    d.factor = 0.25;
    if (target == "e2b" || target == "e4b") {
        d.n_embd = 256;
        d.n_ff = 2048;
        d.n_head = 4;
        d.kv_swa = d.kv_full = target == "e2b" ? 1 : 2;
        d.global_kv_null = true;
        d.window = 512;
        ap.n_embd_backbone = target == "e2b" ? 1536 : 2560;
        ap.ordered = true;
        ap.n_centroids = 2048;
        ap.n_centroids_top_k = 32;
    } else if (target == "26b-a4b" || target == "31b") {
        d.n_embd = 1024;
        d.n_ff = 8192;
        d.n_head = target == "31b" ? 32 : 16;
        d.kv_swa = target == "31b" ? 16 : 8;
        d.kv_full = target == "31b" ? 4 : 2;
        d.k_eq_v = true;
        d.window = 1024;
        ap.n_embd_backbone = target == "31b" ? 5376 : 2816;
        ap.softcap = 30.0;
    } else {
        std::fprintf(stderr, "unknown target shape '%s' (e2b, e4b, 26b-a4b, 31b)\n", target.c_str());
        return 2;
    }
    const AssistantWeights w = make_assistant_weights(ap, 7, type);
    AssistantWriteOptions o;
    o.type = type;
    const std::string path = write_assistant_gguf(ap, w, argv[2], o);
    std::printf("wrote %s: gemma4-assistant for %s (hidden %lld, %s head)\n", path.c_str(), target.c_str(),
                (long long)d.n_embd, ap.ordered ? "centroid-masked" : "full");
    return 0;
}
