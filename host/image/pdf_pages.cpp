// SPDX-License-Identifier: Apache-2.0
// host/image/pdf_pages.cpp: PDF pages to RGB images with poppler-cpp, each page rendered in
// a bounded child process (common/child_process.h).
#include "image/pdf_pages.h"

#include "common/child_process.h"
#include "common/file_read.h"

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

namespace tdm {

namespace {

// Poppler reports problems through one process-wide callback, and would otherwise print
// them to stderr. The last message is kept for our errors. Poppler's document calls take
// this lock too, so a message belongs to the call that made it.
std::mutex poppler_mutex;
std::string poppler_last_message;

void keep_message(const std::string& message, void*) { poppler_last_message = message; }

void route_messages() {
    static std::once_flag once;
    std::call_once(once, [] { poppler::set_debug_error_function(keep_message, nullptr); });
}

std::string last_message_suffix() {
    return poppler_last_message.empty() ? "" : " (" + poppler_last_message + ")";
}

// In the rendering child: the page's pixels as width and height (u32 each, native byte
// order) and RGB rows; the exit status says whether it worked, stderr why not.
int render_in_child(poppler::page& page, double dpi, int out) {
    poppler::page_renderer renderer;
    renderer.set_render_hint(poppler::page_renderer::antialiasing, true);
    renderer.set_render_hint(poppler::page_renderer::text_antialiasing, true);
    renderer.set_paper_color(0xFFFFFFFFu);
    renderer.set_image_format(poppler::image::format_bgr24);
    const poppler::image img = renderer.render_page(&page, dpi, dpi);
    if (!img.is_valid() || img.width() <= 0 || img.height() <= 0) {
        const std::string why = poppler_last_message + "\n";
        (void)write_all(STDERR_FILENO, why.data(), why.size());
        return 2;
    }
    const uint32_t size[2] = {uint32_t(img.width()), uint32_t(img.height())};
    if (!write_all(out, size, sizeof size)) return 1;
    std::vector<uint8_t> row(size_t(size[0]) * 3);
    for (uint32_t y = 0; y < size[1]; ++y) {
        const auto* src = reinterpret_cast<const uint8_t*>(img.const_data() + size_t(y) * size_t(img.bytes_per_row()));
        for (uint32_t x = 0; x < size[0]; ++x) {
            row[x * 3 + 0] = src[x * 3 + 2];
            row[x * 3 + 1] = src[x * 3 + 1];
            row[x * 3 + 2] = src[x * 3 + 0];
        }
        if (!write_all(out, row.data(), row.size())) return 1;
    }
    return 0;
}

// The image render_in_child() sent, checked against the size the page was measured at.
Result<Image> image_from_child(const std::string& bytes, uint64_t w, uint64_t h, const std::string& where) {
    uint32_t size[2] = {};
    if (bytes.size() < sizeof size) return Error::format("{}: the page's renderer sent no image", where);
    std::memcpy(size, bytes.data(), sizeof size);
    // poppler rounds the page's size in points to pixels its own way: a pixel either side
    if (size[0] == 0 || size[1] == 0 || size[0] > w + 1 || size[1] > h + 1 ||
        bytes.size() != sizeof size + size_t(size[0]) * size[1] * 3)
        return Error::format("{}: the page's renderer sent {} bytes for a {} x {} image", where, bytes.size(), size[0],
                             size[1]);
    Image out;
    out.width = size[0];
    out.height = size[1];
    out.rgb.assign(bytes.begin() + sizeof size, bytes.end());
    return out;
}

}  // namespace

struct PdfDocument::State {
    std::string bytes;  // poppler reads from this buffer for the document's life
    std::string name;
    ImageLimits limits;
    std::unique_ptr<poppler::document> doc;
};

PdfDocument::PdfDocument(std::unique_ptr<State> s) : s_(std::move(s)) {}
PdfDocument::PdfDocument(PdfDocument&&) noexcept = default;
PdfDocument& PdfDocument::operator=(PdfDocument&& o) noexcept {
    if (this != &o) {
        destroy_locked(s_);
        s_ = std::move(o.s_);
    }
    return *this;
}
PdfDocument::~PdfDocument() { destroy_locked(s_); }

void PdfDocument::destroy_locked(std::unique_ptr<State>& s) {
    if (!s) return;
    std::lock_guard lock(poppler_mutex);
    s.reset();
}

bool starts_as_pdf(const std::string& path) {
    auto f = open_regular_file(path, "input file");
    if (!f.ok()) return false;
    char head[5] = {};
    return pread(f->fd(), head, 5, 0) == 5 && std::string_view(head, 5) == "%PDF-";
}

Result<PdfDocument> PdfDocument::open(const std::string& path, const ImageLimits& limits) {
    std::string bytes = TDM_TRY(read_regular_file(path, limits.max_file_bytes, "PDF file"));
    return open_bytes(std::move(bytes), path, limits);
}

Result<PdfDocument> PdfDocument::open_bytes(std::string bytes, const std::string& name, const ImageLimits& limits) {
    if (bytes.size() < 5 || bytes.compare(0, 5, "%PDF-") != 0)
        return Error::format("{}: not a PDF document (it does not start with %PDF-)", name);
    if (bytes.size() > size_t(INT32_MAX)) return Error::format("{}: a PDF of more than 2 GiB is not supported", name);
    // The lock outlives `s`, so that a refused document is destroyed under it too.
    std::lock_guard lock(poppler_mutex);
    auto s = std::make_unique<State>();
    s->bytes = std::move(bytes);
    s->name = name;
    s->limits = limits;
    route_messages();
    poppler_last_message.clear();
    s->doc.reset(poppler::document::load_from_raw_data(s->bytes.data(), int(s->bytes.size())));
    if (!s->doc) return Error::format("{}: a damaged PDF that cannot be read{}", name, last_message_suffix());
    if (s->doc->is_locked())
        return Error::format("{}: the PDF is encrypted and needs a password; decrypt it first (e.g. qpdf --decrypt)",
                             name);
    if (s->doc->pages() <= 0) return Error::format("{}: the PDF has no pages", name);
    return PdfDocument(std::move(s));
}

int PdfDocument::pages() const { return s_->doc->pages(); }

Result<Image> PdfDocument::render(int index, double dpi) const {
    if (!(dpi >= 1 && dpi <= 2400)) return Error::format("PDF resolution {} dpi is outside 1..2400", dpi);
    const std::string where = fmt::format("{}, page {}", s_->name, index + 1);
    if (index < 0 || index >= pages()) return Error::format("{}: the document has {} pages", where, pages());
    std::lock_guard lock(poppler_mutex);
    poppler_last_message.clear();
    std::unique_ptr<poppler::page> page(s_->doc->create_page(index));
    if (!page) return Error::format("{}: the page cannot be read{}", where, last_message_suffix());
    // The rendered size before rendering: a page of 200 x 200 inches at 200 dpi is a
    // 1.6-gigapixel bomb.
    const poppler::rectf box = page->page_rect(poppler::crop_box);  // what poppler renders
    const double w = std::ceil(box.width() * dpi / 72.0), h = std::ceil(box.height() * dpi / 72.0);
    if (!(w >= 1 && h >= 1)) return Error::format("{}: the page has no area ({} x {} points)", where, box.width(), box.height());
    if (w * h > double(s_->limits.max_pixels))
        return Error::format("{}: at {} dpi the page is {:.0f} x {:.0f} pixels, more than the limit of {}; use a "
                             "lower resolution",
                             where, dpi, w, h, s_->limits.max_pixels);
    // Poppler bounds neither the memory nor the time a page takes: it renders in a child
    // (forked under the lock, so no other thread is inside Poppler) bounded in both, which
    // sends the pixels back. A page past a bound fails alone.
    const ChildLimits bounds{s_->limits.pdf_page_memory_bytes + uint64_t(w * h) * 8, s_->limits.pdf_page_cpu_seconds};
    const auto wall = std::chrono::seconds(bounds.cpu_seconds ? 2 * uint64_t(bounds.cpu_seconds) + 10 : 3600);
    const size_t max_out = sizeof(uint32_t) * 2 + size_t((w + 1) * (h + 1)) * 3;
    auto child = run_forked([&](int out) { return render_in_child(*page, dpi, out); }, bounds, wall, max_out);
    if (!child.ok()) return Error::format("{}: cannot start the page's renderer: {}", where, child.error().message());
    const ChildResult& r = *child;
    if (r.out_of_memory())
        return Error::format("{}: rendering the page needed more than its memory limit of {} and was stopped", where,
                             bytes_text(bounds.memory_bytes));
    if (r.out_of_cpu(bounds))
        return Error::format("{}: rendering the page took more than its limit of {} s of CPU time and was stopped",
                             where, bounds.cpu_seconds);
    if (r.timed_out)
        return Error::format("{}: rendering the page did not finish within {} s and was stopped", where, wall.count());
    if (r.signal())
        return Error::format("{}: the PDF renderer crashed on this page ({})", where, signal_name(r.signal()));
    const std::string why = r.last_error_line();
    if (!r.exited_ok())
        return Error::format("{}: the page could not be rendered{}", where, why.empty() ? "" : " (" + why + ")");
    return image_from_child(r.out, uint64_t(w), uint64_t(h), where);
}

}  // namespace tdm
