// SPDX-License-Identifier: Apache-2.0
// tests/serve/image_url_test.cpp: image_url content parts of chat requests: strict base64,
// data: URLs, the image decoded where its part was, and every way a part is refused with a
// 400 naming it (bad base64, an http URL, bytes that are no image, an image bomb's header,
// too many images or bytes, an image outside a user message).
#include "serve/image_url.h"

#include <gtest/gtest.h>

#include <string>

#include "image/image_fixtures.h"

using namespace tdm::server;

namespace {

std::string to_base64(const std::vector<uint8_t>& bytes) {
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

std::string png_url(const std::vector<uint8_t>& png) { return "data:image/png;base64," + to_base64(png); }

std::string image_part(const std::string& url) {
    return R"({"type": "image_url", "image_url": {"url": ")" + url + R"("}})";
}

// A chat body with one user message of these content parts.
std::string user_parts(const std::string& parts) {
    return R"({"messages": [{"role": "user", "content": [)" + parts + "]}]}";
}

ApiError image_refused(const std::string& body, const RequestLimits& limits = {}) {
    auto r = parse_generation_request(Endpoint::chat_completions, body, limits);
    EXPECT_FALSE(r.ok()) << "accepted";
    if (r.ok()) return {};
    EXPECT_EQ(r.error().status, 400);
    return r.error();
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(ImageUrl, base64_is_decoded_strictly) {
    auto hello = decode_base64("aGVsbG8=");
    ASSERT_TRUE(hello.ok()) << hello.error().message();
    EXPECT_EQ(std::string(hello->begin(), hello->end()), "hello");
    EXPECT_EQ(decode_base64("aGVsbG8hIQ==")->size(), 7u);  // "hello!!"
    EXPECT_FALSE(decode_base64("").ok());
    EXPECT_TRUE(has(decode_base64("aGVsbG8").error().message(), "multiple of 4"));
    EXPECT_TRUE(has(decode_base64("aGVs bG8").error().message(), "offset 4"));
    EXPECT_TRUE(has(decode_base64("aG=sbG8=").error().message(), "padding"));
    EXPECT_TRUE(has(decode_base64("aGVsbG9=").error().message(), "canonical"));  // 'o' with a stray bit
    EXPECT_FALSE(decode_base64("aGVs-G8_").ok());                               // base64url is not base64
}

TEST(ImageUrl, only_data_urls_of_png_or_jpeg_are_read) {
    EXPECT_TRUE(has(image_url_bytes("https://example.com/a.png").error().message(), "does not fetch URLs"));
    EXPECT_TRUE(has(image_url_bytes("HTTP://example.com/a.png").error().message(), "data: URL"));
    EXPECT_TRUE(has(image_url_bytes("file:///etc/passwd").error().message(), "only data: URLs"));
    EXPECT_TRUE(has(image_url_bytes("data:image/gif;base64,R0lGODlh").error().message(), "PNG and JPEG"));
    EXPECT_TRUE(has(image_url_bytes("data:image/png,rawbytes").error().message(), "not base64"));
    EXPECT_TRUE(has(image_url_bytes("data:image/png;base64").error().message(), "','"));
    auto ok = image_url_bytes("data:image/jpeg;base64,aGVsbG8=");
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ(ok->size(), 5u);
}

TEST(ImageUrl, an_image_part_is_decoded_where_it_sits_among_the_text) {
    const std::vector<uint8_t> png = tdm::test::image_fixture("rgb8.png");
    const std::vector<uint8_t> jpeg = tdm::test::image_fixture("baseline.jpg");
    const std::string jpeg_part = R"({"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,)" +
                                  to_base64(jpeg) + R"(", "detail": "high"}})";
    auto r = parse_generation_request(Endpoint::chat_completions,
                                      user_parts(R"({"type": "text", "text": "Look: "}, )" + image_part(png_url(png)) +
                                                 R"(, {"type": "text", "text": "and "}, )" + jpeg_part +
                                                 R"(, {"type": "text", "text": "done"})"));
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->messages.size(), 1u);
    const ChatMessage& m = r->messages[0];
    EXPECT_EQ(m.content, "Look: and done");
    ASSERT_EQ(m.images.size(), 2u);
    EXPECT_EQ(m.images[0].offset, 6u);
    EXPECT_EQ(m.images[1].offset, 10u);
    auto want = tdm::decode_image(png);
    ASSERT_TRUE(want.ok());
    EXPECT_EQ(m.images[0].image.width, want->width);
    EXPECT_EQ(m.images[0].image.rgb, want->rgb);
    EXPECT_GT(m.images[1].image.width, 0u);
}

TEST(ImageUrl, each_bad_image_part_is_a_400_naming_it) {
    const std::vector<uint8_t> png = tdm::test::image_fixture("rgb8.png");
    const std::string url_param = "messages[0].content[1].image_url.url";
    const std::string text = R"({"type": "text", "text": "x"}, )";

    const ApiError bad64 = image_refused(user_parts(text + image_part("data:image/png;base64,iVBO!!==")));
    EXPECT_EQ(bad64.param, url_param);
    EXPECT_TRUE(has(bad64.message, "base64")) << bad64.message;

    const ApiError http = image_refused(user_parts(text + image_part("http://10.0.0.1/secret.png")));
    EXPECT_EQ(http.param, url_param);
    EXPECT_TRUE(has(http.message, "does not fetch URLs; send the image as a data: URL")) << http.message;

    const ApiError not_image = image_refused(user_parts(text + image_part("data:image/png;base64,aGVsbG8gd29ybGQ=")));
    EXPECT_EQ(not_image.param, url_param);
    EXPECT_TRUE(has(not_image.message, "not a PNG or JPEG")) << not_image.message;

    // a bomb: a valid PNG header declaring 100000 x 100000 pixels, refused before any pixel memory
    const std::string bomb_url = png_url(tdm::test::png_with_size(png, 100000, 100000));
    const ApiError bomb = image_refused(user_parts(text + image_part(bomb_url)));
    EXPECT_EQ(bomb.param, url_param);
    EXPECT_TRUE(has(bomb.message, "larger than the limit")) << bomb.message;

    RequestLimits two;
    two.max_images = 2;
    const std::string one = image_part(png_url(png));
    const std::string three = one + ", " + one + ", " + one;
    const ApiError many = image_refused(user_parts(three), two);
    EXPECT_EQ(many.param, "messages[0].content[2]");
    EXPECT_TRUE(has(many.message, "more than 2 images")) << many.message;

    RequestLimits small;
    small.max_image_bytes = png.size() + 10;
    const ApiError bytes = image_refused(user_parts(image_part(png_url(png)) + ", " + image_part(png_url(png))), small);
    EXPECT_EQ(bytes.param, "messages[0].content[1].image_url.url");
    EXPECT_TRUE(has(bytes.message, "bytes")) << bytes.message;

    const ApiError detail = image_refused(user_parts(
        R"({"type": "image_url", "image_url": {"url": ")" + png_url(png) + R"(", "detail": "ultra"}})"));
    EXPECT_EQ(detail.param, "messages[0].content[0].image_url.detail");

    const ApiError no_url = image_refused(user_parts(R"({"type": "image_url", "image_url": "data:x"})"));
    EXPECT_EQ(no_url.param, "messages[0].content[0].image_url.url");

    const ApiError assistant = image_refused(
        R"({"messages": [{"role": "assistant", "content": [)" + image_part(png_url(png)) + "]}]}");
    EXPECT_EQ(assistant.param, "messages[0].content[0]");
    EXPECT_TRUE(has(assistant.message, "user messages")) << assistant.message;
}
