// SPDX-License-Identifier: Apache-2.0
// tests/model/integer_weights_test.cpp: integer tensors (token id tables: Gemma 4's
// masked_embd_ordering, I32 in GGUF and int64 in HF) load only as f32 (TDM_WEIGHT_F32), and
// only when every value is exact in f32 (|v| <= 2^24); otherwise the error names the tensor.
// (The values' use is covered end to end by tests/models/gemma4's centroid-masked assistant.)
#include <gtest/gtest.h>

#include <cstring>

#include "formats/model_source.h"
#include "model/weight_store.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

class IntegerWeights : public test::DeviceTest {};

std::unique_ptr<ModelSource> write_ids(const std::vector<int32_t>& ids) {
    GgufWriter w;
    w.add_string("general.architecture", "test");
    EXPECT_TRUE(w.add_tensor("ids", TDM_DTYPE_I32, {int64_t(ids.size())}, ids.data(), ids.size() * 4).ok());
    const std::string path = test::make_temp_dir("int-weights") + "/ids.gguf";
    EXPECT_TRUE(w.write_file(path).ok());
    auto src = ModelSource::open(path);
    EXPECT_TRUE(src.ok()) << src.error().message();
    return src.ok() ? std::move(src).value() : nullptr;
}

tdm_weight_request request(uint32_t flags, int64_t n) {
    tdm_weight_request r{};
    r.struct_size = sizeof r;
    r.name = "ids";
    r.n_dims = 1;
    r.ne[0] = n;
    r.flags = flags;
    return r;
}

TEST_F(IntegerWeights, an_i32_table_loads_as_exact_f32_and_only_so) {
    const std::vector<int32_t> ids = {0, 262143, 5, -7, 16777216, 1, 2, 3};
    auto src = write_ids(ids);
    ASSERT_TRUE(src);
    WeightStore store(device(), "test");
    auto as_is = store.load(*src, request(0, 8));
    ASSERT_FALSE(as_is.ok());
    EXPECT_NE(as_is.error().message().find("integer type i32"), std::string::npos) << as_is.error().message();
    auto f32 = store.load(*src, request(TDM_WEIGHT_F32, 8));
    ASSERT_TRUE(f32.ok()) << f32.error().message();
    EXPECT_EQ((*f32)->type(), DType::F32);
}

TEST_F(IntegerWeights, a_value_f32_cannot_hold_exactly_is_refused_naming_the_tensor) {
    auto src = write_ids({0, 1, 16777217, 2});
    ASSERT_TRUE(src);
    WeightStore store(device(), "test");
    auto r = store.load(*src, request(TDM_WEIGHT_F32, 4));
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message().find("'ids' holds 16777217 at element 2"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace tdm
