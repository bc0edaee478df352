/* SPDX-License-Identifier: Apache-2.0 */
// host/image/pdf_pages.h: the pages of a PDF document rendered to RGB images (Poppler), as
// OCR pipelines feed PDFs to vision models: GLM-OCR's SDK renders every page at 200 dpi.
// Pages render one at a time, each in a child process bounded in memory and CPU time
// (ImageLimits), so a document whose page 3 is broken or hostile still gives pages 1, 2
// and 4; errors for the whole document (not a PDF, encrypted, damaged beyond repair) come
// from open().
//
// Usage:
//   PdfDocument doc = TDM_TRY(PdfDocument::open("paper.pdf"));
//   for (int i = 0; i < doc.pages(); ++i) {
//       Result<Image> page = doc.render(i, 200);   // an error names the page
//   }
#pragma once

#include "image/image.h"

#include <memory>
#include <string>

namespace tdm {

// Whether `path` is a regular file that starts as a PDF does ("%PDF-"): how callers tell a
// document from an image before choosing a reader. False for anything unreadable.
bool starts_as_pdf(const std::string& path);

class PdfDocument {
public:
    // Opens `path` (a regular file of at most limits.max_file_bytes). Encrypted documents
    // that need a password are refused: tandem takes none.
    static Result<PdfDocument> open(const std::string& path, const ImageLimits& limits = {});
    // The same on bytes already in memory; `name` is used in messages.
    static Result<PdfDocument> open_bytes(std::string bytes, const std::string& name, const ImageLimits& limits = {});

    PdfDocument(PdfDocument&&) noexcept;
    PdfDocument& operator=(PdfDocument&&) noexcept;
    ~PdfDocument();

    int pages() const;
    // Page `index` (0-based) at `dpi` dots per inch, on white paper, antialiased. A page
    // whose pixels at that resolution would pass limits.max_pixels is refused before
    // rendering; one whose rendering passes limits.pdf_page_memory_bytes or
    // pdf_page_cpu_seconds is stopped, and the error names the page and the limit.
    Result<Image> render(int index, double dpi) const;

private:
    struct State;
    explicit PdfDocument(std::unique_ptr<State> s);
    // Poppler's objects share state across documents: one is destroyed under its lock.
    static void destroy_locked(std::unique_ptr<State>& s);
    std::unique_ptr<State> s_;
};

}  // namespace tdm
