// SPDX-License-Identifier: Apache-2.0
// tests/support/gguf_edit.cpp
#include "support/gguf_edit.h"

#include <cstring>

#include "formats/ggml_types.h"
#include "formats/gguf.h"
#include "writers/gguf_writer.h"

namespace tdm::test {

Status copy_gguf_with_edit(const std::string& src, const std::string& dst, const GgufEdit& e) {
    auto f = TDM_TRY(GgufFile::open(src));
    GgufWriter w;
    for (const GgufKV& kv : f->kvs()) {
        if (kv.key == "general.alignment") continue;  // the writer sets it
        if (!e.set_key.empty() && kv.key == e.set_key)
            w.add_string(kv.key, e.set_value);
        else
            w.add_value(kv.key, kv.value);
    }
    for (const GgufTensorInfo& t : f->tensors()) {
        if (t.name == e.drop_tensor) continue;
        std::vector<int64_t> ne(t.ne, t.ne + t.n_dims);
        const uint8_t* data = f->tensor_data(t);
        if (t.name == e.reshape_tensor) {
            ne[1] /= 2;
            TDM_TRY(w.add_tensor(t.name, t.type, ne, data, t.nbytes / 2));
        } else if (t.name == e.retype_tensor) {
            const uint64_t n = TDM_TRY(ggml_tensor_nbytes(e.retype_to, ne.data(), uint32_t(ne.size())));
            std::vector<uint8_t> zeros(n, 0);
            TDM_TRY(w.add_tensor(t.name, e.retype_to, ne, zeros.data(), zeros.size()));
        } else if (t.name == e.nan_tensor) {
            const uint64_t size = t.type == 0 ? 4 : t.type == 1 ? 2 : 0;  // f32, f16
            if (!size || (e.nan_element + 1) * size > t.nbytes)
                return Error::format("{}: element {} of an f32 or f16 tensor expected", t.name, e.nan_element);
            std::vector<uint8_t> bytes(data, data + t.nbytes);
            const uint32_t nan32 = 0x7fc00000u;
            const uint16_t nan16 = 0x7e00u;
            std::memcpy(bytes.data() + e.nan_element * size, size == 4 ? static_cast<const void*>(&nan32) : &nan16, size);
            TDM_TRY(w.add_tensor(t.name, t.type, ne, bytes.data(), bytes.size()));
        } else {
            TDM_TRY(w.add_tensor(t.name, t.type, ne, data, t.nbytes));
        }
    }
    return w.write_file(dst);
}

}  // namespace tdm::test
