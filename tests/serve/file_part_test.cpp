// SPDX-License-Identifier: Apache-2.0
// tests/serve/file_part_test.cpp: file content parts of chat requests (PDFs, OpenAI's shape):
// a one-page PDF gives exactly the image an image_url part of its page's rendering gives
// (a PNG, lossless, of the page rendered at the server's dpi), a two-page PDF two images in
// page order at the part's place, and every way a file part is refused with a 400 naming it
// (file_id, not a PDF, a broken or encrypted PDF, too many pages or bytes, not a user turn).
// The PDFs are tests/fixtures/images/*.pdf, written by hand by its make_golden.py.
#include "serve/file_part.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "image/image_fixtures.h"
#include "image/pdf_pages.h"

using namespace tdm::server;

namespace {

std::string base64_of(const std::vector<uint8_t>& bytes) {
    static const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const uint32_t n = uint32_t(bytes[i]) << 16 | (i + 1 < bytes.size() ? uint32_t(bytes[i + 1]) << 8 : 0) |
                           (i + 2 < bytes.size() ? uint32_t(bytes[i + 2]) : 0);
        out += alphabet[n >> 18 & 63];
        out += alphabet[n >> 12 & 63];
        out += i + 1 < bytes.size() ? alphabet[n >> 6 & 63] : '=';
        out += i + 2 < bytes.size() ? alphabet[n & 63] : '=';
    }
    return out;
}

void append_be32(std::vector<uint8_t>& out, uint32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(uint8_t(v >> s));
}

void append_png_chunk(std::vector<uint8_t>& png, const char* type, const std::vector<uint8_t>& data) {
    append_be32(png, uint32_t(data.size()));
    const size_t start = png.size();
    png.insert(png.end(), type, type + 4);
    png.insert(png.end(), data.begin(), data.end());
    append_be32(png, tdm::test::png_crc(png.data() + start, png.size() - start));
}

// The image as an 8-bit RGB PNG, its zlib stream of stored (uncompressed) blocks: lossless,
// which is all a test of "the same pixels as an image_url part" needs.
std::vector<uint8_t> png_of(const tdm::Image& image) {
    std::vector<uint8_t> raw;
    const size_t row = size_t(image.width) * 3;
    for (uint32_t y = 0; y < image.height; ++y) {
        raw.push_back(0);  // filter: none
        raw.insert(raw.end(), image.rgb.begin() + ptrdiff_t(y * row), image.rgb.begin() + ptrdiff_t((y + 1) * row));
    }
    std::vector<uint8_t> z = {0x78, 0x01};
    for (size_t at = 0; at < raw.size();) {
        const size_t n = std::min<size_t>(65535, raw.size() - at);
        z.push_back(at + n == raw.size() ? 1 : 0);
        z.push_back(uint8_t(n)), z.push_back(uint8_t(n >> 8));
        z.push_back(uint8_t(~n)), z.push_back(uint8_t(~n >> 8));
        z.insert(z.end(), raw.begin() + ptrdiff_t(at), raw.begin() + ptrdiff_t(at + n));
        at += n;
    }
    uint32_t a = 1, b = 0;  // Adler-32
    for (uint8_t c : raw) a = (a + c) % 65521, b = (b + a) % 65521;
    append_be32(z, b << 16 | a);
    std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    std::vector<uint8_t> ihdr;
    append_be32(ihdr, image.width);
    append_be32(ihdr, image.height);
    ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});  // 8 bits, RGB, deflate, no filter choice, no interlace
    append_png_chunk(png, "IHDR", ihdr);
    append_png_chunk(png, "IDAT", z);
    append_png_chunk(png, "IEND", {});
    return png;
}

std::string file_part_json(const std::string& file_data, const std::string& filename = "doc.pdf") {
    return R"({"type": "file", "file": {"file_data": ")" + file_data + R"(", "filename": ")" + filename + R"("}})";
}

std::string pdf_data(const std::string& fixture) {
    return "data:application/pdf;base64," + base64_of(tdm::test::image_fixture(fixture));
}

std::string one_user_turn(const std::string& parts) {
    return R"({"messages": [{"role": "user", "content": [)" + parts + "]}]}";
}

ApiError file_refused(const std::string& body, const RequestLimits& limits = {}) {
    auto r = parse_generation_request(Endpoint::chat_completions, body, limits);
    EXPECT_FALSE(r.ok()) << "accepted";
    if (r.ok()) return {};
    EXPECT_EQ(r.error().status, 400);
    return r.error();
}

bool mentions(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

tdm::Image rendered_page(const std::string& fixture, int page, double dpi) {
    auto doc = tdm::PdfDocument::open(tdm::test::image_fixture_path(fixture));
    EXPECT_TRUE(doc.ok()) << doc.error().message();
    auto image = doc->render(page, dpi);
    EXPECT_TRUE(image.ok()) << image.error().message();
    return image.ok() ? std::move(*image) : tdm::Image{};
}

}  // namespace

TEST(FilePart, a_one_page_pdf_is_the_image_url_part_of_its_page_rendered_at_the_server_dpi) {
    RequestLimits limits;
    limits.pdf_dpi = 100;  // not the default: the part must be rendered at the server's dpi
    auto from_pdf = parse_generation_request(
        Endpoint::chat_completions,
        one_user_turn(R"({"type": "text", "text": "Read: "}, )" + file_part_json(pdf_data("cropped.pdf")) +
                      R"(, {"type": "text", "text": "Text Recognition:"})"),
        limits);
    ASSERT_TRUE(from_pdf.ok()) << from_pdf.error().message;
    const tdm::Image page = rendered_page("cropped.pdf", 0, 100);
    ASSERT_GT(page.width, 0u);
    const std::string png_part = R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,)" +
                                 base64_of(png_of(page)) + R"("}})";
    auto from_png = parse_generation_request(
        Endpoint::chat_completions,
        one_user_turn(R"({"type": "text", "text": "Read: "}, )" + png_part +
                      R"(, {"type": "text", "text": "Text Recognition:"})"),
        limits);
    ASSERT_TRUE(from_png.ok()) << from_png.error().message;
    const ChatMessage& a = from_pdf->messages[0];
    const ChatMessage& b = from_png->messages[0];
    EXPECT_EQ(a.content, b.content);
    ASSERT_EQ(a.images.size(), 1u);
    ASSERT_EQ(b.images.size(), 1u);
    EXPECT_EQ(a.images[0].offset, b.images[0].offset);
    EXPECT_EQ(a.images[0].image.width, b.images[0].image.width);
    EXPECT_EQ(a.images[0].image.height, b.images[0].image.height);
    EXPECT_TRUE(a.images[0].image.rgb == b.images[0].image.rgb) << "the pixels differ";
}

TEST(FilePart, a_two_page_pdf_gives_its_pages_in_order_at_the_part_s_place) {
    auto r = parse_generation_request(
        Endpoint::chat_completions,
        one_user_turn(R"({"type": "text", "text": "Pages "}, )" + file_part_json(pdf_data("two_pages.pdf")) +
                      R"(, {"type": "text", "text": "end"})"));
    ASSERT_TRUE(r.ok()) << r.error().message;
    const ChatMessage& m = r->messages[0];
    EXPECT_EQ(m.content, "Pages end");
    ASSERT_EQ(m.images.size(), 2u);
    for (int i = 0; i < 2; ++i) {
        EXPECT_EQ(m.images[size_t(i)].offset, 6u);
        const tdm::Image want = rendered_page("two_pages.pdf", i, RequestLimits{}.pdf_dpi);
        EXPECT_EQ(m.images[size_t(i)].image.width, want.width) << "page " << i + 1;
        EXPECT_EQ(m.images[size_t(i)].image.height, want.height) << "page " << i + 1;
        EXPECT_TRUE(m.images[size_t(i)].image.rgb == want.rgb) << "page " << i + 1;
    }
    EXPECT_NE(m.images[0].image.height, m.images[1].image.height);  // the pages differ in size
}

TEST(FilePart, each_bad_file_part_is_a_400_naming_it) {
    const std::string part_at = "messages[0].content[1]";
    const std::string text = R"({"type": "text", "text": "x"}, )";

    const ApiError id = file_refused(one_user_turn(text + R"({"type": "file", "file": {"file_id": "file-abc"}})"));
    EXPECT_EQ(id.param, part_at + ".file.file_id");
    EXPECT_TRUE(mentions(id.message, "file_id")) << id.message;
    EXPECT_TRUE(mentions(id.message, "no Files API")) << id.message;

    const ApiError missing = file_refused(one_user_turn(text + R"({"type": "file", "file": {"filename": "a.pdf"}})"));
    EXPECT_EQ(missing.param, part_at + ".file.file_data");

    const std::string png64 = base64_of(tdm::test::image_fixture("rgb8.png"));
    const ApiError png_type = file_refused(one_user_turn(text + file_part_json("data:image/png;base64," + png64)));
    EXPECT_EQ(png_type.param, part_at);
    EXPECT_TRUE(mentions(png_type.message, "only PDF files")) << png_type.message;

    const ApiError not_pdf =
        file_refused(one_user_turn(text + file_part_json("data:application/pdf;base64," + png64, "fake.pdf")));
    EXPECT_EQ(not_pdf.param, part_at);
    EXPECT_TRUE(mentions(not_pdf.message, "'fake.pdf': not a PDF")) << not_pdf.message;

    std::vector<uint8_t> broken = tdm::test::image_fixture("two_pages.pdf");
    broken.resize(40);  // the header and the start of the first object: no pages, no xref
    const ApiError damaged = file_refused(
        one_user_turn(text + file_part_json("data:application/pdf;base64," + base64_of(broken))));
    EXPECT_EQ(damaged.param, part_at);
    EXPECT_TRUE(mentions(damaged.message, "PDF")) << damaged.message;

    const ApiError locked = file_refused(one_user_turn(text + file_part_json(pdf_data("encrypted.pdf"))));
    EXPECT_EQ(locked.param, part_at);
    EXPECT_TRUE(mentions(locked.message, "encrypted")) << locked.message;

    const ApiError bad64 = file_refused(one_user_turn(text + file_part_json("data:application/pdf;base64,JVBE!!==")));
    EXPECT_EQ(bad64.param, part_at + ".file.file_data");
    EXPECT_TRUE(mentions(bad64.message, "base64")) << bad64.message;

    // pages count as images, with the request's image_url parts
    RequestLimits two;
    two.max_images = 2;
    const std::string png_part =
        R"({"type": "image_url", "image_url": {"url": "data:image/png;base64,)" + png64 + R"("}}, )";
    const ApiError pages = file_refused(one_user_turn(png_part + file_part_json(pdf_data("two_pages.pdf"))), two);
    EXPECT_EQ(pages.param, part_at);
    EXPECT_TRUE(mentions(pages.message, "2 pages")) << pages.message;
    EXPECT_TRUE(mentions(pages.message, "more than 2 images")) << pages.message;

    RequestLimits small;
    small.max_image_bytes = tdm::test::image_fixture("two_pages.pdf").size() - 1;
    const ApiError bytes = file_refused(one_user_turn(text + file_part_json(pdf_data("two_pages.pdf"))), small);
    EXPECT_EQ(bytes.param, part_at + ".file.file_data");
    EXPECT_TRUE(mentions(bytes.message, "bytes")) << bytes.message;

    const ApiError assistant = file_refused(
        R"({"messages": [{"role": "assistant", "content": [)" + file_part_json(pdf_data("two_pages.pdf")) + "]}]}");
    EXPECT_EQ(assistant.param, "messages[0].content[0]");
    EXPECT_TRUE(mentions(assistant.message, "user messages")) << assistant.message;
}
