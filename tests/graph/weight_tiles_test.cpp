// SPDX-License-Identifier: Apache-2.0
// Row tiles (host/graph/weight_layout.h): where tile_rows puts each texel and
// scale field, which weights are tiled, the padding of a partial last tile, and
// the error when a binding cannot hold one tile. That the kernels read the tiles
// right is what the op tests check against the references (ops_test.cpp,
// moe_ops_test.cpp, int8_matmul_test.cpp), with the same planes.
#include <gtest/gtest.h>

#include <cstring>

#include "common/quant.h"
#include "graph/weight.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"

namespace tdm {
namespace {

using test::randn;

TEST(WeightTiles, tile_rows_stores_element_i_of_the_tile_rows_together) {
    // Q8_0, 64 columns: 2 blocks per row = 4 main texels and 2 scale fields.
    WeightLayout l = *weight_layout(DType::Q8_0, 64, 100);
    l.row_tile = 8;  // small tiles: 100 rows = 12 whole tiles and one of 4
    const uint64_t texels = l.main_row_bytes / 16, fields = l.scale_row_bytes / 2;
    ASSERT_EQ(texels, 4u);
    ASSERT_EQ(fields, 2u);
    EXPECT_EQ(stored_rows(l, 100), 104);
    // row-after-row planes whose every 16-bit word says where it came from (row, word)
    std::vector<uint8_t> main_rows(100 * l.main_row_bytes), scale_rows(100 * l.scale_row_bytes);
    for (size_t i = 0; i < main_rows.size() / 2; ++i) {
        const uint16_t tag = uint16_t(i / (l.main_row_bytes / 2) * 100 + i % (l.main_row_bytes / 2));
        std::memcpy(&main_rows[2 * i], &tag, 2);
    }
    for (size_t i = 0; i < scale_rows.size() / 2; ++i) {
        const uint16_t tag = uint16_t(40000 + i / fields * 10 + i % fields);
        std::memcpy(&scale_rows[2 * i], &tag, 2);
    }
    std::vector<uint8_t> main(104 * l.main_row_bytes, 0xee), scale(104 * l.scale_row_bytes, 0xee);
    // in two calls, the second starting inside a tile
    tile_rows(l, main_rows.data(), scale_rows.data(), 0, 37, main.data(), scale.data());
    tile_rows(l, main_rows.data() + 37 * l.main_row_bytes, scale_rows.data() + 37 * l.scale_row_bytes, 37, 63,
              main.data(), scale.data());
    for (uint64_t r = 0; r < 100; ++r) {
        const uint64_t first = r / 8 * 8, in_tile = r % 8;
        for (uint64_t t = 0; t < texels; ++t)
            EXPECT_EQ(std::memcmp(&main[((first * texels) + t * 8 + in_tile) * 16], &main_rows[r * 64 + t * 16], 16),
                      0)
                << "row " << r << " texel " << t;
        for (uint64_t f = 0; f < fields; ++f)
            EXPECT_EQ(std::memcmp(&scale[((first * fields) + f * 8 + in_tile) * 2], &scale_rows[r * 4 + f * 2], 2), 0)
                << "row " << r << " field " << f;
    }
    // the last tile's missing rows are left alone
    EXPECT_EQ(main[((96 * texels) + 0 * 8 + 5) * 16], 0xee);
    EXPECT_EQ(scale[((96 * fields) + 1 * 8 + 7) * 2], 0xee);
}

TEST(WeightTiles, quantized_types_are_tiled_and_plain_ones_are_not) {
    for (const DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q5_1, DType::Q4_K, DType::Q5_K, DType::Q6_K})
        EXPECT_TRUE(tiles_rows(*weight_layout(t, 256, 3))) << dtype_name(t);
    for (const DType t : {DType::F32, DType::F16, DType::BF16})
        EXPECT_FALSE(tiles_rows(*weight_layout(t, 256, 3))) << dtype_name(t);
}

class WeightTilesOnDevice : public test::DeviceTest {};

TEST_F(WeightTilesOnDevice, texel_weights_pad_their_last_tile_and_storage_weights_stay_row_major) {
    const int64_t K = 64, M = 70;
    const auto wb = quantize_matrix(DType::Q8_0, randn(size_t(K * M), 9).data(), M, K);
    vk::Arena arena(device(), vk::MemoryKind::device, "test", 1 << 20);
    const int64_t ne[4] = {K, M, 1, 1};
    auto w = DeviceWeight::upload(device(), arena, "tiled", DType::Q8_0, ne, wb.data());
    ASSERT_TRUE(w.ok()) << w.error().message();
    const WeightLayout& l = (*w)->layout();
    ASSERT_EQ((*w)->chunks().size(), 1u);
    const WeightChunk& c = (*w)->chunks()[0];
    if (device().caps().prefer_texel_weights) {
        EXPECT_EQ(l.row_tile, kWeightRowTile);
        EXPECT_EQ(c.main.size, 128 * l.main_row_bytes);  // 70 rows in two tiles of 64
        EXPECT_EQ(c.scale.size, 128 * l.scale_row_bytes);
    } else {
        EXPECT_EQ(l.row_tile, 0);
        EXPECT_EQ(c.main.size, 70 * l.main_row_bytes);
    }
    // plain types are never tiled
    const auto fb = quantize_matrix(DType::F16, randn(size_t(K * M), 10).data(), M, K);
    auto f = DeviceWeight::upload(device(), arena, "plain", DType::F16, ne, fb.data());
    ASSERT_TRUE(f.ok()) << f.error().message();
    EXPECT_EQ((*f)->layout().row_tile, 0);
    EXPECT_EQ((*f)->chunks()[0].main.size, 70 * (*f)->layout().main_row_bytes);
}

TEST_F(WeightTilesOnDevice, a_binding_smaller_than_one_tile_is_an_error_naming_the_weight) {
    const int64_t K = 256, M = 100;
    const auto wb = quantize_matrix(DType::Q4_K, randn(size_t(K * M), 11).data(), M, K);
    vk::Arena arena(device(), vk::MemoryKind::device, "test", 1 << 20);
    const int64_t ne[4] = {K, M, 1, 1};
    WeightUploadOptions o;
    o.max_binding_bytes = 63 * row_bytes(DType::Q4_K, K);
    auto w = DeviceWeight::upload(device(), arena, "narrow", DType::Q4_K, ne, wb.data(), o);
    if (!device().caps().prefer_texel_weights) {  // storage buffers: no tiles, chunks of 63 rows
        ASSERT_TRUE(w.ok()) << w.error().message();
        EXPECT_EQ((*w)->chunks().size(), 2u);
        return;
    }
    ASSERT_FALSE(w.ok());
    EXPECT_NE(w.error().message().find("narrow"), std::string::npos) << w.error().message();
    EXPECT_NE(w.error().message().find("tile of 64 rows"), std::string::npos) << w.error().message();
    o.max_binding_bytes = 64 * row_bytes(DType::Q4_K, K);
    auto ok = DeviceWeight::upload(device(), arena, "wide_enough", DType::Q4_K, ne, wb.data(), o);
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ((*ok)->chunks().size(), 2u);
}

}  // namespace
}  // namespace tdm
