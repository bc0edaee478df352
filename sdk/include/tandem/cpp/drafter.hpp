// SPDX-License-Identifier: MIT
// tandem/cpp/drafter.hpp: a draftless drafter (tandem.h section 7) as a C++
// class. Derive from Drafter, implement begin/propose/accept (and save if it
// persists something), hand new objects to the host with drafter_handle(), and
// let drafter_desc() fill the descriptor's callbacks:
//
//     class Lookup : public Drafter { ... };
//     tdm_status create(const tdm_host_api*, const tdm_options* o, void** out, char* err, size_t err_size) {
//         return guard(Err(err, err_size), "lookup: create", [&] { *out = drafter_handle(new Lookup(...)); });
//     }
//     constexpr tdm_drafter_desc kLookup = drafter_desc("lookup", kTypes, create);
//
// The callbacks catch C++ exceptions (guard()). Both generations of calls are
// set: the v2 ones (begin2/propose2/accept2) report a failure to the host,
// which turns the drafter off for the rest of the sequence; the v1 ones, for
// a host that calls only those, log a failure once through the host and then
// propose nothing until the next begin, which is what a v2 host does.
//
// Header-only, C++17. [object]: the host never overlaps calls on one object.
#ifndef TANDEM_CPP_DRAFTER_HPP
#define TANDEM_CPP_DRAFTER_HPP

#include <cstdint>
#include <cstdio>

#include "../tandem.h"
#include "descriptors.hpp"
#include "host.hpp"
#include "status.hpp"

namespace tdm::sdk {

class Drafter {
public:
    // `host` (may be NULL: no logging) must outlive the drafter (a plugin's
    // Host lives until shutdown); `name` is the descriptor's (static storage).
    Drafter(const Host* host, const char* name) noexcept : host_(host), name_(name ? name : "drafter") {}
    virtual ~Drafter() = default;
    Drafter(const Drafter&) = delete;
    Drafter& operator=(const Drafter&) = delete;

    // A new sequence starts with prompt[0, n_prompt).
    virtual tdm_status begin(const std::int32_t* prompt, std::uint64_t n_prompt, Err err) = 0;
    // Up to `max` tokens to follow history[0, n_history) into out; their count to *n_out.
    virtual tdm_status propose(const std::int32_t* history, std::uint64_t n_history, std::int32_t* out,
                               std::uint64_t max, std::uint64_t* n_out, Err err) = 0;
    // The first n_accepted of n_drafted proposed tokens were accepted.
    virtual tdm_status accept(const std::int32_t* history, std::uint64_t n_history, std::uint64_t n_drafted,
                              std::uint64_t n_accepted, Err err) = 0;
    // Persists state at shutdown (the default has nothing to persist).
    virtual tdm_status save(Err) { return TDM_OK; }

    const char* name() const noexcept { return name_; }
    const Host* host() const noexcept { return host_; }
    // True after a v1 call failed, until the next begin.
    bool retired() const noexcept { return retired_; }

private:
    template <class F>
    friend tdm_status drafter_call(Drafter* d, const char* call, Err err, F&& fn) noexcept;
    friend void drafter_retire(Drafter* d, const Status& s) noexcept;
    friend void drafter_begin(void*, const std::int32_t*, std::uint64_t) noexcept;

    const Host* host_;
    const char* name_;
    bool retired_ = false;
};

// The void* a create callback hands the host (*out) for a new drafter: the
// callbacks below cast it back to Drafter*, so it must be this conversion.
inline void* drafter_handle(Drafter* d) noexcept { return d; }

// Runs one call of `d` under guard(), naming the drafter and the call in
// messages ("ngram_cache: propose: out of memory").
template <class F>
tdm_status drafter_call(Drafter* d, const char* call, Err err, F&& fn) noexcept {
    char what[128];
    std::snprintf(what, sizeof what, "%s: %s", d ? d->name_ : "drafter", call);
    if (!d) return err.fail(TDM_ERR_INVALID_ARGUMENT, "%s: null drafter", what);
    return guard(err, what, std::forward<F>(fn));
}

inline void drafter_retire(Drafter* d, const Status& s) noexcept {
    if (!d->retired_ && d->host_)
        d->host_->log(TDM_LOG_WARN, "%s; drafter %s stops proposing until the next sequence", s.message(), d->name_);
    d->retired_ = true;
}

// ---- the C callbacks -------------------------------------------------------------

inline void drafter_destroy(void* d) noexcept { delete static_cast<Drafter*>(d); }

inline tdm_status drafter_begin2(void* p, const std::int32_t* prompt, std::uint64_t n_prompt, char* err,
                                 std::size_t err_size) noexcept {
    Drafter* d = static_cast<Drafter*>(p);
    const Err e(err, err_size);
    if (!prompt && n_prompt) return e.fail(TDM_ERR_INVALID_ARGUMENT, "begin: null prompt of %llu tokens",
                                            static_cast<unsigned long long>(n_prompt));
    return drafter_call(d, "begin", e, [&] { return d->begin(prompt, n_prompt, e); });
}

inline tdm_status drafter_propose2(void* p, const std::int32_t* history, std::uint64_t n_history, std::int32_t* out,
                                   std::uint64_t max, std::uint64_t* n_out, char* err, std::size_t err_size) noexcept {
    Drafter* d = static_cast<Drafter*>(p);
    const Err e(err, err_size);
    if (!n_out) return e.fail(TDM_ERR_INVALID_ARGUMENT, "propose: null n_out");
    *n_out = 0;
    if ((!history && n_history) || (!out && max))
        return e.fail(TDM_ERR_INVALID_ARGUMENT, "propose: null history or output buffer");
    if (max == 0) return TDM_OK;
    std::uint64_t n = 0;
    const tdm_status st =
        drafter_call(d, "propose", e, [&] { return d->propose(history, n_history, out, max, &n, e); });
    if (st != TDM_OK) return st;
    if (n > max)
        return e.fail(TDM_ERR_INTERNAL, "%s: propose wrote %llu tokens, more than the %llu asked for", d->name(),
                      static_cast<unsigned long long>(n), static_cast<unsigned long long>(max));
    *n_out = n;
    return TDM_OK;
}

inline tdm_status drafter_accept2(void* p, const std::int32_t* history, std::uint64_t n_history,
                                  std::uint64_t n_drafted, std::uint64_t n_accepted, char* err,
                                  std::size_t err_size) noexcept {
    Drafter* d = static_cast<Drafter*>(p);
    const Err e(err, err_size);
    if (!history && n_history) return e.fail(TDM_ERR_INVALID_ARGUMENT, "accept: null history");
    return drafter_call(d, "accept", e, [&] { return d->accept(history, n_history, n_drafted, n_accepted, e); });
}

inline tdm_status drafter_save(void* p, char* err, std::size_t err_size) noexcept {
    Drafter* d = static_cast<Drafter*>(p);
    const Err e(err, err_size);
    return drafter_call(d, "save", e, [&] { return d->save(e); });
}

// v1: the same calls without a status; a failure is logged once and retires
// the drafter until the next begin.
inline void drafter_begin(void* p, const std::int32_t* prompt, std::uint64_t n_prompt) noexcept {
    Drafter* d = static_cast<Drafter*>(p);
    if (!d) return;
    d->retired_ = false;
    Status s;
    if (!s.capture(drafter_begin2(p, prompt, n_prompt, s.err().data(), s.err().size()))) drafter_retire(d, s);
}

inline std::uint64_t drafter_propose(void* p, const std::int32_t* history, std::uint64_t n_history, std::int32_t* out,
                                     std::uint64_t max) noexcept {
    Drafter* d = static_cast<Drafter*>(p);
    if (!d || d->retired()) return 0;
    Status s;
    std::uint64_t n = 0;
    if (!s.capture(drafter_propose2(p, history, n_history, out, max, &n, s.err().data(), s.err().size()))) {
        drafter_retire(d, s);
        return 0;
    }
    return n;
}

inline void drafter_accept(void* p, const std::int32_t* history, std::uint64_t n_history, std::uint64_t n_drafted,
                           std::uint64_t n_accepted) noexcept {
    Drafter* d = static_cast<Drafter*>(p);
    if (!d || d->retired()) return;
    Status s;
    if (!s.capture(drafter_accept2(p, history, n_history, n_drafted, n_accepted, s.err().data(), s.err().size())))
        drafter_retire(d, s);
}

// A drafter descriptor whose objects are Drafters made by `create`: every
// callback set (v1 and v2, destroy, save).
constexpr DrafterDesc drafter_desc(const char* name, const char* const* spec_types,
                                   decltype(tdm_drafter_desc::create) create) noexcept {
    return DrafterDesc(name)
        .spec_types(spec_types)
        .lifetime(create, &drafter_destroy)
        .calls_v2(&drafter_begin2, &drafter_propose2, &drafter_accept2)
        .calls_v1(&drafter_begin, &drafter_propose, &drafter_accept)
        .save(&drafter_save);
}

}  // namespace tdm::sdk

#endif  // TANDEM_CPP_DRAFTER_HPP
