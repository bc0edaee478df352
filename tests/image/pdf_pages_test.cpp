// SPDX-License-Identifier: Apache-2.0
// tests/image/pdf_pages_test.cpp: PDF pages rendered to RGB (tests/fixtures/images/*.pdf,
// written by make_golden.py from flat rectangles at whole points, so that at 72 dpi every
// interior pixel has the rectangle's colour), and PDFs that are encrypted, damaged, not
// PDFs, or hold a page too large to render, or one built to exhaust memory, beside good
// ones.
#include "image/pdf_pages.h"
#include "image_fixtures.h"

#include <sys/resource.h>

#include <gtest/gtest.h>

#include "common/child_process.h"

using namespace tdm;
using namespace tdm::test;

namespace {

void expect_colour(const Image& img, uint32_t x, uint32_t y, uint8_t r, uint8_t g, uint8_t b, const char* what) {
    const uint8_t* p = img.pixel(x, y);
    EXPECT_EQ(int(p[0]), r) << what << " at " << x << "," << y;
    EXPECT_EQ(int(p[1]), g) << what << " at " << x << "," << y;
    EXPECT_EQ(int(p[2]), b) << what << " at " << x << "," << y;
}

TEST(PdfPages, two_pages_render_at_the_asked_resolution_with_their_colours) {
    auto doc = PdfDocument::open(image_fixture_path("two_pages.pdf"));
    ASSERT_TRUE(doc.ok()) << doc.error().message();
    ASSERT_EQ(doc->pages(), 2);

    auto a = doc->render(0, 72);
    ASSERT_TRUE(a.ok()) << a.error().message();
    EXPECT_EQ(a->width, 60u);
    EXPECT_EQ(a->height, 40u);
    expect_colour(*a, 10, 20, 255, 0, 0, "page 1 left");
    expect_colour(*a, 50, 20, 0, 0, 255, "page 1 right");

    auto b = doc->render(1, 144);  // twice the resolution: twice the pixels each way
    ASSERT_TRUE(b.ok()) << b.error().message();
    EXPECT_EQ(b->width, 60u);
    EXPECT_EQ(b->height, 100u);
    expect_colour(*b, 30, 10, 255, 255, 255, "page 2 top (paper)");
    expect_colour(*b, 30, 90, 0, 128, 0, "page 2 bottom");  // PDF y grows upward: the rectangle is at the bottom

    auto past = doc->render(2, 72);
    ASSERT_FALSE(past.ok());
    EXPECT_NE(past.error().message().find("has 2 pages"), std::string::npos) << past.error().message();
    auto bad_dpi = doc->render(0, 0);
    ASSERT_FALSE(bad_dpi.ok());
    EXPECT_NE(bad_dpi.error().message().find("dpi"), std::string::npos);
}

// A PDF of 200 x 200 point pages, one per content stream, with its cross-reference table.
std::string pdf_of_pages(const std::vector<std::string>& contents) {
    std::vector<std::string> objects = {"<< /Type /Catalog /Pages 2 0 R >>"};
    std::string kids;
    for (size_t i = 0; i < contents.size(); ++i) kids += fmt::format("{} 0 R ", 3 + 2 * i);
    objects.push_back(fmt::format("<< /Type /Pages /Kids [{}] /Count {} >>", kids, contents.size()));
    for (size_t i = 0; i < contents.size(); ++i) {
        objects.push_back(
            fmt::format("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 200] /Contents {} 0 R >>", 4 + 2 * i));
        objects.push_back(fmt::format("<< /Length {} >>\nstream\n{}\nendstream", contents[i].size(), contents[i]));
    }
    std::string pdf = "%PDF-1.4\n";
    std::vector<size_t> offsets;
    for (size_t i = 0; i < objects.size(); ++i) {
        offsets.push_back(pdf.size());
        pdf += fmt::format("{} 0 obj\n{}\nendobj\n", i + 1, objects[i]);
    }
    const size_t xref = pdf.size();
    pdf += fmt::format("xref\n0 {}\n0000000000 65535 f \n", objects.size() + 1);
    for (size_t at : offsets) pdf += fmt::format("{:010d} 00000 n \n", at);
    pdf += fmt::format("trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{}\n%%EOF\n", objects.size() + 1, xref);
    return pdf;
}

uint64_t peak_rss_bytes(int who) {
    rusage u{};
    getrusage(who, &u);
    return uint64_t(u.ru_maxrss) * 1024;
}

TEST(PdfPages, a_page_of_400k_nested_saves_fails_alone_within_its_memory_bound_and_the_next_page_renders) {
    if (!memory_limits_work()) GTEST_SKIP() << "no address-space bound under AddressSanitizer";
    std::string nested;
    for (int i = 0; i < 400'000; ++i) nested += "q ";
    ImageLimits limits;
    limits.pdf_page_memory_bytes = uint64_t(256) << 20;
    auto doc = PdfDocument::open_bytes(pdf_of_pages({nested, "0 0 1 rg 20 20 100 100 re f"}), "nested.pdf", limits);
    ASSERT_TRUE(doc.ok()) << doc.error().message();
    ASSERT_EQ(doc->pages(), 2);
    const uint64_t rss_before = peak_rss_bytes(RUSAGE_SELF);

    auto hostile = doc->render(0, 72);
    ASSERT_FALSE(hostile.ok()) << "a page of 400,000 nested graphics states rendered within 256 MiB";
    EXPECT_NE(hostile.error().message().find("nested.pdf, page 1: rendering the page needed more than its memory "
                                             "limit of 256 MiB"),
              std::string::npos)
        << hostile.error().message();
    // The child that rendered it grew by no more than its bound; this process not at all.
    EXPECT_LT(peak_rss_bytes(RUSAGE_CHILDREN), rss_before + (uint64_t(300) << 20));
    EXPECT_LT(peak_rss_bytes(RUSAGE_SELF), rss_before + (uint64_t(16) << 20));

    auto next = doc->render(1, 72);
    ASSERT_TRUE(next.ok()) << next.error().message();
    EXPECT_EQ(next->width, 200u);
    expect_colour(*next, 70, 130, 0, 0, 255, "page 2's square");  // PDF y grows upward
    expect_colour(*next, 150, 30, 255, 255, 255, "page 2's paper");
}

TEST(PdfPages, a_page_too_large_is_refused_and_the_pages_around_it_still_render) {
    auto doc = PdfDocument::open(image_fixture_path("huge_middle_page.pdf"));
    ASSERT_TRUE(doc.ok()) << doc.error().message();
    ASSERT_EQ(doc->pages(), 3);
    EXPECT_TRUE(doc->render(0, 200).ok());
    auto huge = doc->render(1, 200);
    ASSERT_FALSE(huge.ok());
    EXPECT_NE(huge.error().message().find("page 2: at 200 dpi the page is 55556 x 55556 pixels"), std::string::npos)
        << huge.error().message();
    auto last = doc->render(2, 200);
    ASSERT_TRUE(last.ok()) << last.error().message();
    EXPECT_EQ(last->width, 83u);  // 30 pt at 200 dpi: 83.3 pixels
}

TEST(PdfPages, the_crop_box_is_what_renders_and_what_the_size_limit_checks) {
    // A 200000-point media box cropped to 60 x 40 points.
    auto doc = PdfDocument::open(image_fixture_path("cropped.pdf"));
    ASSERT_TRUE(doc.ok()) << doc.error().message();
    auto page = doc->render(0, 72);
    ASSERT_TRUE(page.ok()) << page.error().message();
    EXPECT_EQ(page->width, 60u);
    EXPECT_EQ(page->height, 40u);
    expect_colour(*page, 10, 20, 255, 0, 0, "left");
}

TEST(PdfPages, an_encrypted_pdf_is_refused_with_what_to_do) {
    auto doc = PdfDocument::open(image_fixture_path("encrypted.pdf"));
    ASSERT_FALSE(doc.ok());
    EXPECT_NE(doc.error().message().find("encrypted and needs a password"), std::string::npos)
        << doc.error().message();
    EXPECT_NE(doc.error().message().find("encrypted.pdf"), std::string::npos);
}

TEST(PdfPages, damaged_and_foreign_files_are_errors_never_crashes) {
    auto png = PdfDocument::open(image_fixture_path("rgb8.png"));
    ASSERT_FALSE(png.ok());
    EXPECT_NE(png.error().message().find("not a PDF document"), std::string::npos) << png.error().message();

    auto garbage = PdfDocument::open_bytes("%PDF-1.7\n" + std::string(3000, '\x7f'), "garbage.pdf");
    ASSERT_FALSE(garbage.ok());
    EXPECT_NE(garbage.error().message().find("garbage.pdf"), std::string::npos) << garbage.error().message();

    // Every truncation of a good document: an error, or a document whose pages render or
    // say why not.
    const std::vector<uint8_t> file = image_fixture("two_pages.pdf");
    for (size_t n = 5; n < file.size(); n += 23) {
        auto doc = PdfDocument::open_bytes(std::string(file.begin(), file.begin() + long(n)), "cut.pdf");
        if (!doc.ok()) {
            EXPECT_NE(doc.error().message().find("cut.pdf"), std::string::npos) << doc.error().message();
            continue;
        }
        for (int i = 0; i < doc->pages(); ++i) {
            auto page = doc->render(i, 72);
            if (page.ok()) {
                EXPECT_EQ(page->rgb.size(), size_t(page->width) * page->height * 3);
            } else {
                EXPECT_NE(page.error().message().find("page " + std::to_string(i + 1)), std::string::npos);
            }
        }
    }

    auto missing = PdfDocument::open("/nonexistent/doc.pdf");
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.error().message().find("/nonexistent/doc.pdf"), std::string::npos);
}

}  // namespace
