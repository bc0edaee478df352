// SPDX-License-Identifier: Apache-2.0
// tests/plugin/host_rows_test.cpp: extension tdm.host_rows as a plugin calls it. A table
// loaded through it stays in host memory when the store's policy says so (on; auto from the
// threshold), takes no device memory, and yields each row as get_rows would (dequantized
// exactly); token_rows makes an input the host fills for such a table and a get_rows for a
// table in device memory; every other use of a host table, and a request the extension cannot
// honour (slabs, conversion flags), is refused with a message that says why.
// (The whole path, logits included, is covered by tests/models/gemma4/gemma4_host_rows_test.cpp.)
#include <gtest/gtest.h>

#include <random>

#include "common/quant.h"
#include "formats/model_source.h"
#include "plugin/handles.h"
#include "support/device_fixture.h"
#include "support/fixtures.h"
#include "writers/gguf_writer.h"

namespace tdm {
namespace {

class HostRows : public test::DeviceTest {};

const tdm_host_api& host_host_rows() { return *host_api(); }
std::string last_error_host_rows() { return host_host_rows().last_error(); }

const tdm_ext_host_rows* extension_host_rows() {
    uint32_t version = 0;
    auto ext = static_cast<const tdm_ext_host_rows*>(host_host_rows().get_extension(TDM_EXT_HOST_ROWS, 1, &version));
    EXPECT_EQ(version, TDM_EXT_HOST_ROWS_VERSION);
    return ext;
}

// A Q8_0 table of 40 rows x 64 columns, quantized from random values.
constexpr int64_t kCols = 64, kRows = 40;
std::unique_ptr<ModelSource> write_table(std::vector<uint8_t>* bytes) {
    std::mt19937 rng(3);
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<float> v(size_t(kCols * kRows));
    for (float& x : v) x = n(rng);
    bytes->resize(size_t(row_bytes(DType::Q8_0, uint64_t(kCols)) * kRows));
    for (int64_t r = 0; r < kRows; ++r)
        quantize_row(DType::Q8_0, v.data() + r * kCols, bytes->data() + r * row_bytes(DType::Q8_0, kCols), kCols);
    GgufWriter w;
    w.add_string("general.architecture", "test");
    EXPECT_TRUE(w.add_tensor("table", TDM_DTYPE_Q8_0, {kCols, kRows}, bytes->data(), bytes->size()).ok());
    const std::string path = test::make_temp_dir("host-rows") + "/t.gguf";
    EXPECT_TRUE(w.write_file(path).ok());
    auto src = ModelSource::open(path);
    EXPECT_TRUE(src.ok()) << src.error().message();
    return src.ok() ? std::move(src).value() : nullptr;
}

tdm_weight_request table_request() {
    tdm_weight_request r{};
    r.struct_size = sizeof r;
    r.name = "table";
    r.n_dims = 2;
    r.ne[0] = kCols;
    r.ne[1] = kRows;
    return r;
}

TEST_F(HostRows, a_table_in_host_memory_takes_no_device_memory_and_gives_exact_rows) {
    std::vector<uint8_t> bytes;
    auto src = write_table(&bytes);
    ASSERT_TRUE(src);
    const tdm_ext_host_rows* ext = extension_host_rows();
    ASSERT_NE(ext, nullptr) << last_error_host_rows();
    WeightStore store(device(), "test");
    store.set_host_tables(WeightStore::HostTables::on, 0);
    tdm_loader loader{&store, src.get()};
    const tdm_weight_request req = table_request();
    const tdm_weight* table = nullptr;
    ASSERT_EQ(ext->load(&loader, &req, &table), TDM_OK) << last_error_host_rows();
    EXPECT_EQ(ext->in_host_memory(table), 1);
    EXPECT_EQ(store.device_bytes(), 0u);
    EXPECT_EQ(store.host_bytes(), bytes.size());
    const DeviceWeight* w = from_handle(table);
    std::vector<float> got(kCols), want(kCols);
    for (int64_t r : {int64_t(0), int64_t(17), kRows - 1}) {
        w->host_row_f32(r, got.data());
        dequantize_row(DType::Q8_0, bytes.data() + r * row_bytes(DType::Q8_0, kCols), want.data(), kCols);
        EXPECT_EQ(got, want) << "row " << r;
    }

    // token_rows: an F32 [cols, n] input the host fills, recorded on the graph
    tdm_graph g;
    g.batch.n_tokens = 3;
    g.tokens = g.graph.input(DType::I32, {3}, "tokens");
    tdm_tensor rows{};
    ASSERT_EQ(ext->token_rows(&g, table, "rows", &rows), TDM_OK) << last_error_host_rows();
    ASSERT_EQ(g.host_rows.size(), 1u);
    EXPECT_EQ(g.host_rows[0].first, rows.id);
    EXPECT_EQ(g.host_rows[0].second, w);
    EXPECT_EQ(g.graph.tensor(rows.id).kind, TensorKind::input);
    EXPECT_EQ(g.graph.tensor(rows.id).ne[0], kCols);
    EXPECT_EQ(g.graph.tensor(rows.id).ne[1], 3);
    // nothing else may read it
    tdm_tensor t{};
    EXPECT_EQ(host_host_rows().graph_weight(&g, table, &t), TDM_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error_host_rows().find("table lives in host memory (tdm.host_rows): only token_rows reads it"),
              std::string::npos)
        << last_error_host_rows();
    EXPECT_EQ(host_host_rows().graph_weight_rows(&g, table, 4, &t), TDM_ERR_INVALID_ARGUMENT);
}

TEST_F(HostRows, placement_follows_the_policy_and_a_table_in_device_memory_is_a_get_rows) {
    std::vector<uint8_t> bytes;
    auto src = write_table(&bytes);
    ASSERT_TRUE(src);
    const tdm_ext_host_rows* ext = extension_host_rows();
    ASSERT_NE(ext, nullptr);
    const tdm_weight_request req = table_request();
    struct Case {
        WeightStore::HostTables mode;
        uint64_t threshold;
        int in_host;
    };
    for (const Case c : {Case{WeightStore::HostTables::off, 0, 0}, Case{WeightStore::HostTables::automatic, 0, 1},
                         Case{WeightStore::HostTables::automatic, bytes.size(), 1},
                         Case{WeightStore::HostTables::automatic, bytes.size() + 1, 0}}) {
        WeightStore store(device(), "test");
        store.set_host_tables(c.mode, c.threshold);
        tdm_loader loader{&store, src.get()};
        const tdm_weight* table = nullptr;
        ASSERT_EQ(ext->load(&loader, &req, &table), TDM_OK) << last_error_host_rows();
        EXPECT_EQ(ext->in_host_memory(table), c.in_host) << "threshold " << c.threshold;
        EXPECT_EQ(store.host_bytes() > 0, c.in_host == 1);
        if (c.in_host) continue;
        tdm_graph g;
        g.batch.n_tokens = 2;
        g.tokens = g.graph.input(DType::I32, {2}, "tokens");
        const size_t nodes = g.graph.nodes().size();
        tdm_tensor rows{};
        ASSERT_EQ(ext->token_rows(&g, table, nullptr, &rows), TDM_OK) << last_error_host_rows();
        EXPECT_TRUE(g.host_rows.empty());
        ASSERT_EQ(g.graph.nodes().size(), nodes + 1);
        EXPECT_EQ(g.graph.nodes().back().desc.op, TDM_OP_GET_ROWS);
    }
}

TEST_F(HostRows, requests_the_extension_cannot_honour_are_refused_naming_the_table) {
    std::vector<uint8_t> bytes;
    auto src = write_table(&bytes);
    ASSERT_TRUE(src);
    const tdm_ext_host_rows* ext = extension_host_rows();
    ASSERT_NE(ext, nullptr);
    WeightStore store(device(), "test");
    store.set_host_tables(WeightStore::HostTables::on, 0);
    tdm_loader loader{&store, src.get()};
    tdm_weight_request slab = table_request();
    slab.slab_rows = 8;
    tdm_weight_request f32 = table_request();
    f32.flags = TDM_WEIGHT_F32;
    for (const tdm_weight_request* r : {&slab, &f32}) {
        const tdm_weight* table = nullptr;
        EXPECT_NE(ext->load(&loader, r, &table), TDM_OK);
        EXPECT_NE(last_error_host_rows().find("load_weight 'table': a table read by token rows is a 2-D tensor taken as stored"),
                  std::string::npos)
            << last_error_host_rows();
    }
    tdm_weight_request missing = table_request();
    missing.name = "absent";
    const tdm_weight* table = nullptr;
    EXPECT_EQ(ext->load(&loader, &missing, &table), TDM_ERR_NOT_FOUND);
    EXPECT_NE(last_error_host_rows().find("missing tensor 'absent'"), std::string::npos) << last_error_host_rows();
    tdm_weight_request wrong = table_request();
    wrong.ne[1] = kRows + 1;
    EXPECT_EQ(ext->load(&loader, &wrong, &table), TDM_ERR_SHAPE);
}

}  // namespace
}  // namespace tdm
