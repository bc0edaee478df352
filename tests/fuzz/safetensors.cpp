// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/safetensors.cpp: the safetensors header parser (formats/safetensors.h) on
// arbitrary bytes. A parsed file's tensors must lie inside the file, have non-negative dims
// whose product matches their byte size, and a ggml view of 1..4 dims with the same count.
// Seeds: small files from host/writers (fuzz_seeds.cpp).
#include "formats/safetensors.h"
#include "fuzz_support.h"

#include <string>

using namespace tdm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    auto file = MappedFile::from_bytes("fuzz.safetensors", std::string(fuzz::as_text(data, size)));
    (void)looks_like_safetensors(*file);
    auto parsed = parse_safetensors(*file, 0);
    if (!parsed.ok()) {
        FUZZ_CHECK(!parsed.error().message().empty());
        return 0;
    }
    const uint8_t* lo = file->data();
    const uint8_t* hi = lo + file->size();
    for (const SafetensorsTensor& t : *parsed) {
        FUZZ_CHECK(t.data >= lo && t.data <= hi && t.nbytes <= uint64_t(hi - t.data));
        FUZZ_CHECK(t.n_dims >= 1 && t.n_dims <= 4);
        unsigned __int128 elements = 1;
        for (int64_t d : t.shape) {
            FUZZ_CHECK(d >= 0);
            elements *= uint64_t(d);
        }
        unsigned __int128 view_elements = 1;
        for (int d = 0; d < 4; ++d) {
            FUZZ_CHECK(t.ne[d] >= 0);
            view_elements *= uint64_t(t.ne[d]);
        }
        FUZZ_CHECK(view_elements == elements);
        const uint32_t bits = safetensors_dtype_bits(t.dtype);
        FUZZ_CHECK(bits > 0);
        FUZZ_CHECK((elements * bits + 7) / 8 == t.nbytes);
        const volatile uint8_t* p = t.data;  // read every byte (ASan checks the bounds)
        for (uint64_t i = 0; i < t.nbytes; ++i) (void)p[i];
    }
    return 0;
}
