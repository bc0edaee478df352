// SPDX-License-Identifier: Apache-2.0
// host/cli/line_reader.cpp
#include "cli/line_reader.h"

#include <unistd.h>

#include <cerrno>
#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <cwchar>
#include <filesystem>

#ifdef TANDEM_HAVE_LIBEDIT
#include <histedit.h>
#endif

namespace tdm::cli {

LineReader::Input LineReader::read(const std::string& prompt, const std::string& continuation_prompt) {
    Input out;
    out.status = Status::line;
    bool first = true;
    while (true) {
        Input part = read_physical(first ? prompt : continuation_prompt);
        if (part.status == Status::interrupted) return part;
        if (part.status == Status::eof) {
            // a continuation cut short by the end of the input is still a message
            if (first) return part;
            return out;
        }
        first = false;
        std::string& s = part.text;
        if (!s.empty() && s.back() == '\r') s.pop_back();
        const bool continues = !s.empty() && s.back() == '\\';
        if (continues) s.pop_back();
        out.text += s;
        if (!continues) return out;
        out.text += '\n';
    }
}

namespace {

// Plain lines from file descriptor 0, read with read(2) so that SIGINT (a
// handler without SA_RESTART) ends a wait for input.
class PlainReader : public LineReader {
public:
    PlainReader(bool terminal, const std::atomic<bool>* interrupted) : terminal_(terminal), interrupted_(interrupted) {}

protected:
    Input read_physical(const std::string& prompt) override {
        if (terminal_) {
            std::fputs(prompt.c_str(), stdout);
            std::fflush(stdout);
        }
        Input in;
        while (true) {
            if (const size_t nl = buffer_.find('\n'); nl != std::string::npos) {
                in.status = Status::line;
                in.text = buffer_.substr(0, nl);
                buffer_.erase(0, nl + 1);
                return in;
            }
            if (eof_) {
                if (buffer_.empty()) return in;  // eof
                in.status = Status::line;
                in.text = std::move(buffer_);
                buffer_.clear();
                return in;
            }
            char chunk[4096];
            const ssize_t n = ::read(0, chunk, sizeof chunk);
            if (n > 0) {
                buffer_.append(chunk, size_t(n));
            } else if (n == 0) {
                eof_ = true;
            } else if (errno == EINTR) {
                if (interrupted_ && interrupted_->load()) {
                    in.status = Status::interrupted;
                    return in;
                }
            } else {
                eof_ = true;  // an unreadable input ends the session like its end
            }
        }
    }

private:
    bool terminal_;
    const std::atomic<bool>* interrupted_;
    std::string buffer_;
    bool eof_ = false;
};

#ifdef TANDEM_HAVE_LIBEDIT

// libedit's el_gets with our own character reader: it decodes UTF-8 (the
// locale's multibyte encoding) and gives up on EINTR once SIGINT set the flag,
// which libedit's own reader would retry.
class EditReader : public LineReader {
public:
    EditReader(std::string history_file, const std::atomic<bool>* interrupted)
        : history_file_(std::move(history_file)), interrupted_(interrupted) {
        std::setlocale(LC_CTYPE, "");  // multibyte input; numbers keep the C locale
        el_ = el_init("tandem", stdin, stdout, stderr);
        history_ = history_init();
        HistEvent ev;
        history(history_, &ev, H_SETSIZE, 1000);
        history(history_, &ev, H_SETUNIQUE, 1);
        if (!history_file_.empty()) history(history_, &ev, H_LOAD, history_file_.c_str());
        el_set(el_, EL_EDITOR, "emacs");
        el_set(el_, EL_HIST, history, history_);
        el_set(el_, EL_CLIENTDATA, this);
        el_set(el_, EL_PROMPT, &EditReader::prompt_of);
        el_set(el_, EL_GETCFN, &EditReader::read_char);
        el_source(el_, nullptr);  // ~/.editrc, as other libedit programs
    }
    ~EditReader() override {
        el_end(el_);
        history_end(history_);
    }
    bool editing() const override { return true; }

protected:
    Input read_physical(const std::string& prompt) override {
        prompt_ = prompt;
        Input in;
        int count = 0;
        const char* line = el_gets(el_, &count);
        if (!line || count <= 0) {
            if (interrupted_ && interrupted_->load()) in.status = Status::interrupted;
            return in;
        }
        in.status = Status::line;
        in.text.assign(line, size_t(count));
        if (!in.text.empty() && in.text.back() == '\n') in.text.pop_back();
        if (!in.text.empty()) {
            HistEvent ev;
            history(history_, &ev, H_ENTER, in.text.c_str());
            if (!history_file_.empty()) history(history_, &ev, H_SAVE, history_file_.c_str());
        }
        return in;
    }

private:
    static EditReader* self(EditLine* el) {
        void* p = nullptr;
        el_get(el, EL_CLIENTDATA, &p);
        return static_cast<EditReader*>(p);
    }
    static char* prompt_of(EditLine* el) { return self(el)->prompt_.data(); }
    // 1: a character; 0: end of input; -1: interrupted or an error
    static int read_char(EditLine* el, wchar_t* out) {
        EditReader* r = self(el);
        std::mbstate_t state{};
        while (true) {
            char c;
            const ssize_t n = ::read(0, &c, 1);
            if (n == 0) return 0;
            if (n < 0) {
                if (errno == EINTR && !(r->interrupted_ && r->interrupted_->load())) continue;
                return -1;
            }
            const size_t k = std::mbrtowc(out, &c, 1, &state);
            if (k == size_t(-2)) continue;  // more bytes of this character
            if (k == size_t(-1)) {          // not a character here: pass the byte through
                *out = wchar_t(static_cast<unsigned char>(c));
                return 1;
            }
            return 1;
        }
    }

    std::string history_file_;
    const std::atomic<bool>* interrupted_;
    std::string prompt_;
    EditLine* el_ = nullptr;
    History* history_ = nullptr;
};

#endif

}  // namespace

std::unique_ptr<LineReader> LineReader::create(bool terminal, std::string history_file,
                                               const std::atomic<bool>* interrupted) {
#ifdef TANDEM_HAVE_LIBEDIT
    if (terminal) {
        if (!history_file.empty()) {
            std::error_code ec;  // no history directory: history for this session only
            std::filesystem::create_directories(std::filesystem::path(history_file).parent_path(), ec);
        }
        return std::make_unique<EditReader>(std::move(history_file), interrupted);
    }
#else
    (void)history_file;
#endif
    return std::make_unique<PlainReader>(terminal, interrupted);
}

std::string default_history_file() {
    const char* state = std::getenv("XDG_STATE_HOME");
    if (state && state[0] == '/') return std::string(state) + "/tandem/chat_history";
    const char* home = std::getenv("HOME");
    if (home && home[0]) return std::string(home) + "/.local/state/tandem/chat_history";
    return {};
}

}  // namespace tdm::cli
