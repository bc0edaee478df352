// SPDX-License-Identifier: Apache-2.0
// tests/fuzz/gguf.cpp: the GGUF reader (formats/gguf.h) on arbitrary bytes, then what reads a
// parsed file: the typed getters, ModelSource's tensor view through the plugin metadata API,
// and the GGUF tokenizer loader (tokenizer/vocab_gguf.h) with a short encode/decode.
// Every pointer the reader exposes must stay inside the file; every failure is an Error.
// Seeds: small synthetic models from host/writers (fuzz_seeds.cpp).
#include "formats/gguf.h"
#include "formats/model_source.h"
#include "fuzz_support.h"
#include "metadata_queries.h"
#include "tokenizer/vocab_gguf.h"

#include <string>

using namespace tdm;

namespace {

void check_inside(const GgufFile& f) {
    const uint8_t* lo = f.file().data();
    const uint8_t* hi = lo + f.file().size();
    for (const GgufKV& kv : f.kvs()) {
        const GgufValue& v = kv.value;
        FUZZ_CHECK(v.data >= lo && v.data <= hi && v.nbytes <= uint64_t(hi - v.data));
        for (std::string_view s : gguf_string_elements(v)) {
            const auto* p = reinterpret_cast<const uint8_t*>(s.data());
            FUZZ_CHECK(p >= lo && p <= hi && s.size() <= uint64_t(hi - p));
        }
        (void)f.get_uint(kv.key);
        (void)f.get_int(kv.key);
        (void)f.get_float(kv.key);
        (void)f.get_bool(kv.key);
        (void)f.get_string(kv.key);
        (void)f.get_int_array(kv.key);
        (void)f.get_float_array(kv.key);
        (void)f.get_string_array(kv.key);
        if (auto b = f.get_bool_array(kv.key); b.ok()) FUZZ_CHECK(b->size() == kv.value.count);
    }
    for (const GgufTensorInfo& t : f.tensors()) {
        const uint8_t* p = f.tensor_data(t);
        FUZZ_CHECK(t.n_dims >= 1 && t.n_dims <= 4);
        FUZZ_CHECK(p >= lo && p <= hi && t.nbytes <= uint64_t(hi - p));
        FUZZ_CHECK(f.find_tensor(t.name) != nullptr);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string bytes(fuzz::as_text(data, size));
    auto parsed = GgufFile::from_memory("fuzz.gguf", bytes);
    if (!parsed.ok()) {
        FUZZ_CHECK(!parsed.error().message().empty());
        return 0;
    }
    check_inside(**parsed);

    if (auto tok = load_tokenizer_gguf(**parsed); tok.ok()) {
        const std::vector<int32_t> ids = tok->encode("Hello world <|im_end|>\n\t 123 ümlaut", true, true);
        for (int32_t id : ids) FUZZ_CHECK(id >= 0 && id < tok->n_vocab());
        (void)tok->decode(ids);
    }

    // ModelSource reads files by path: the same bytes through the path a model load takes.
    const std::string path = fuzz::write_scratch_file("model.gguf", bytes);
    if (auto source = ModelSource::open(path); source.ok()) fuzz::query_plugin_keys(**source);
    return 0;
}
