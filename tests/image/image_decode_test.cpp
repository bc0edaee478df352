// SPDX-License-Identifier: Apache-2.0
// tests/image/image_decode_test.cpp: PNG and JPEG decoding against PIL's pixels
// (Image.open(f).convert("RGB"), tests/fixtures/images/make_golden.py), and hostile files:
// truncated, corrupt, oversized, empty, not an image, not a regular file.
#include "image/image.h"
#include "image_fixtures.h"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

using namespace tdm;
using namespace tdm::test;

namespace {

class DecodeLikePil : public ::testing::TestWithParam<const char*> {};

TEST_P(DecodeLikePil, pixels_equal_pils_convert_rgb) {
    const std::string name = GetParam();
    const std::vector<uint8_t> file = image_fixture(name);
    ASSERT_FALSE(file.empty()) << name;
    auto img = decode_image(file);
    ASSERT_TRUE(img.ok()) << name << ": " << img.error().message();
    EXPECT_EQ(img->width, 37u);
    EXPECT_EQ(img->height, 23u);
    const std::vector<uint8_t> golden = image_fixture(name.substr(0, name.rfind('.')) + ".rgb");
    ASSERT_EQ(img->rgb.size(), golden.size());
    size_t differing = 0;
    for (size_t i = 0; i < golden.size(); ++i) differing += img->rgb[i] != golden[i];
    EXPECT_EQ(differing, 0u) << name << ": " << differing << " of " << golden.size() << " samples differ from PIL's";
}

INSTANTIATE_TEST_SUITE_P(Formats, DecodeLikePil,
                         ::testing::Values("rgb8.png", "interlaced.png", "rgb_trns.png", "rgba8.png", "palette_trns.png", "gray8.png", "gray1.png",
                                           "la8.png", "rgb16.png", "gray16.png", "baseline.jpg", "q444.jpg",
                                           "progressive.jpg", "gray.jpg", "cmyk.jpg", "cmyk_noadobe.jpg"),
                         [](const auto& param_info) {
                             std::string n = param_info.param;
                             for (char& c : n)
                                 if (c == '.') c = '_';
                             return n;
                         });

TEST(ImageDecode, every_truncation_of_a_png_and_a_jpeg_is_an_error_that_says_so_or_a_decoded_image) {
    for (const char* name : {"rgb8.png", "progressive.jpg", "baseline.jpg"}) {
        const std::vector<uint8_t> file = image_fixture(name);
        size_t truncated_messages = 0;
        for (size_t n = 1; n < file.size(); ++n) {
            auto img = decode_image({file.data(), n});
            // The last bytes of a file (PNG's IEND, JPEG's EOI) carry no pixels: a file cut
            // there still decodes, and must then give every pixel.
            if (img.ok()) {
                EXPECT_GT(n + 16, file.size()) << name << " cut to " << n << " bytes decoded";
                EXPECT_EQ(img->rgb, decode_image(file)->rgb) << name << " cut to " << n;
                continue;
            }
            const std::string& m = img.error().message();
            EXPECT_TRUE(m.find("PNG") != std::string::npos || m.find("JPEG") != std::string::npos ||
                        m.find("not a PNG or JPEG") != std::string::npos)
                << m;
            truncated_messages += m.find("truncated") != std::string::npos;
        }
        EXPECT_GT(truncated_messages, file.size() / 2) << name << ": most cuts should be named truncation";
    }
}

TEST(ImageDecode, a_jpeg_without_its_end_marker_decodes_like_pil) {
    // PIL decodes a baseline JPEG cut just before or inside its end-of-image marker.
    const std::vector<uint8_t> file = image_fixture("baseline.jpg");
    const auto whole = decode_image(file);
    ASSERT_TRUE(whole.ok());
    for (size_t cut : {1u, 2u}) {
        auto img = decode_image({file.data(), file.size() - cut});
        ASSERT_TRUE(img.ok()) << "cut by " << cut << ": " << img.error().message();
        EXPECT_EQ(img->rgb, whole->rgb);
    }
}

TEST(ImageDecode, flipped_bytes_never_crash_and_errors_name_the_format) {
    for (const char* name : {"rgb8.png", "palette_trns.png", "baseline.jpg", "progressive.jpg", "cmyk.jpg"}) {
        const std::vector<uint8_t> file = image_fixture(name);
        for (size_t at = 0; at < file.size(); at += 7) {
            std::vector<uint8_t> bad = file;
            bad[at] ^= uint8_t(0x5A + at);
            auto img = decode_image(bad);
            if (img.ok()) {
                EXPECT_EQ(img->rgb.size(), size_t(img->width) * img->height * 3);
            } else {
                EXPECT_FALSE(img.error().message().empty());
            }
        }
    }
}

TEST(ImageDecode, a_png_whose_header_checksum_is_wrong_is_refused_as_corrupt) {
    std::vector<uint8_t> png = image_fixture("rgb8.png");
    ASSERT_TRUE(decode_image(png).ok());
    put_be32(&png[29], png_crc(&png[12], 17) ^ 1u);  // IHDR's checksum, one bit off
    auto img = decode_image(png);
    ASSERT_FALSE(img.ok()) << "decoded a " << img->width << " x " << img->height << " image";
    EXPECT_NE(img.error().message().find("corrupt PNG: IHDR: CRC error"), std::string::npos) << img.error().message();
}

TEST(ImageDecode, a_header_beyond_the_pixel_limit_is_refused_before_allocating) {
    auto png = decode_image(png_with_size(image_fixture("rgb8.png"), 100000, 100000));
    ASSERT_FALSE(png.ok());
    EXPECT_NE(png.error().message().find("PNG image of 100000 x 100000 pixels is larger than the limit"),
              std::string::npos)
        << png.error().message();

    // JPEG: the baseline SOF0 marker's height and width fields.
    std::vector<uint8_t> jpeg = image_fixture("baseline.jpg");
    size_t sof = 0;
    for (size_t i = 2; i + 9 < jpeg.size(); ++i)
        if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
            sof = i;
            break;
        }
    ASSERT_NE(sof, 0u);
    jpeg[sof + 5] = 0xEA, jpeg[sof + 6] = 0x60;  // 60000 rows
    jpeg[sof + 7] = 0xEA, jpeg[sof + 8] = 0x60;  // 60000 columns
    auto big = decode_image(jpeg);
    ASSERT_FALSE(big.ok());
    EXPECT_NE(big.error().message().find("JPEG image of 60000 x 60000 pixels is larger than the limit"),
              std::string::npos)
        << big.error().message();

    ImageLimits small;
    small.max_pixels = 100;
    auto limited = decode_image(image_fixture("rgb8.png"), small);
    ASSERT_FALSE(limited.ok());
    EXPECT_NE(limited.error().message().find("37 x 23"), std::string::npos) << limited.error().message();
}

TEST(ImageDecode, zero_sized_images_are_errors) {
    auto png = decode_image(png_with_size(image_fixture("rgb8.png"), 0, 23));
    ASSERT_FALSE(png.ok());
    EXPECT_NE(png.error().message().find("PNG"), std::string::npos) << png.error().message();

    std::vector<uint8_t> jpeg = image_fixture("baseline.jpg");
    for (size_t i = 2; i + 9 < jpeg.size(); ++i)
        if (jpeg[i] == 0xFF && jpeg[i + 1] == 0xC0) {
            jpeg[i + 7] = 0, jpeg[i + 8] = 0;  // zero columns
            break;
        }
    auto j = decode_image(jpeg);
    ASSERT_FALSE(j.ok());
    EXPECT_NE(j.error().message().find("JPEG"), std::string::npos) << j.error().message();
}

TEST(ImageDecode, a_progressive_jpeg_with_more_scans_than_allowed_is_refused) {
    ImageLimits limits;
    limits.max_jpeg_scans = 2;
    auto img = decode_image(image_fixture("progressive.jpg"), limits);
    ASSERT_FALSE(img.ok());
    EXPECT_NE(img.error().message().find("more than 2 progressive scans"), std::string::npos) << img.error().message();
    EXPECT_TRUE(decode_image(image_fixture("progressive.jpg")).ok());
}

TEST(ImageDecode, other_formats_and_empty_input_are_named) {
    const std::string pdf = "%PDF-1.7\n1 0 obj\n";
    auto a = decode_image({reinterpret_cast<const uint8_t*>(pdf.data()), pdf.size()});
    ASSERT_FALSE(a.ok());
    EXPECT_NE(a.error().message().find("it is a PDF document"), std::string::npos) << a.error().message();
    const std::string gif = "GIF89a\x01\x00\x01\x00";
    auto b = decode_image({reinterpret_cast<const uint8_t*>(gif.data()), gif.size()});
    ASSERT_FALSE(b.ok());
    EXPECT_NE(b.error().message().find("GIF"), std::string::npos);
    auto c = decode_image({});
    ASSERT_FALSE(c.ok());
    EXPECT_NE(c.error().message().find("empty"), std::string::npos);
    const std::string text = "hello";
    auto d = decode_image({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
    ASSERT_FALSE(d.ok());
    EXPECT_NE(d.error().message().find("not a PNG or JPEG"), std::string::npos);
}

TEST(ImageDecode, load_image_reads_regular_files_only_and_names_the_path) {
    auto ok = load_image(image_fixture_path("q444.jpg"));
    ASSERT_TRUE(ok.ok()) << ok.error().message();
    EXPECT_EQ(ok->width, 37u);

    auto missing = load_image("/nonexistent/page.png");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message().find("/nonexistent/page.png"), std::string::npos);

    const std::string fifo = (std::filesystem::temp_directory_path() / ("tandem_image_fifo_" + std::to_string(getpid())))
                                 .string();
    ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    auto f = load_image(fifo);  // must return, not block
    std::filesystem::remove(fifo);
    ASSERT_FALSE(f.ok());
    EXPECT_NE(f.error().message().find("FIFO"), std::string::npos) << f.error().message();

    auto dir = load_image(std::filesystem::temp_directory_path().string());
    ASSERT_FALSE(dir.ok());
    EXPECT_NE(dir.error().message().find("directory"), std::string::npos) << dir.error().message();

    auto bad = load_image(image_fixture_path("rgb8.rgb"));
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message().find("rgb8.rgb"), std::string::npos) << bad.error().message();
}

}  // namespace
