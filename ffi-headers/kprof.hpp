/*
 * kprof.hpp - C++ helpers over the kprof annotation API (kprof.h).
 *
 *   #include <kprof.hpp>
 *   void solve() {
 *       kprof::Region r("solve");          // closed when r goes out of scope
 *       kprof::counter("residual", 1e-3);
 *       kprof::event("converged");
 *   }
 *
 * Link with -lkprof_core (or the CMake target kprof::kprof). Header only.
 */
#ifndef KPROF_HPP
#define KPROF_HPP

#include <cstdint>
#include <string>

#include "kprof.h"

namespace kprof {

/* An annotation region open for the lifetime of the object (RAII): begins in the
 * constructor, ends in the destructor, also when the scope is left by an exception. */
class Region {
public:
    explicit Region(const char *name) noexcept : name_(name) { kprof_region_begin(name); }
    explicit Region(const std::string &name) noexcept : name_(nullptr) {
        kprof_region_begin(name.c_str());
    }
    ~Region() { kprof_region_end(name_); }

    Region(const Region &) = delete;
    Region &operator=(const Region &) = delete;
    Region(Region &&) = delete;
    Region &operator=(Region &&) = delete;

private:
    const char *name_;
};

/* Opens and closes a region explicitly (kprof_region_begin/end). */
inline void region_begin(const char *name) noexcept { kprof_region_begin(name); }
inline void region_begin(const std::string &name) noexcept { kprof_region_begin(name.c_str()); }
inline void region_end(const char *name = nullptr) noexcept { kprof_region_end(name); }

/* A marker event. */
inline void event(const char *name) noexcept { kprof_event(name); }
inline void event(const std::string &name) noexcept { kprof_event(name.c_str()); }

/* A value of the counter `name`. */
inline void counter(const char *name, double value) noexcept { kprof_counter(name, value); }
inline void counter(const std::string &name, double value) noexcept {
    kprof_counter(name.c_str(), value);
}

/* `count` messages of `bytes` bytes in all sent to (KPROF_SEND) or received from
 * (KPROF_RECEIVE) `peer` on `channel`: this process's row of the channel's matrix. */
inline void message(const char *channel, int direction, std::uint32_t peer, std::uint64_t count,
                    std::uint64_t bytes) noexcept {
    kprof_message(channel, direction, peer, count, bytes);
}

/* A key/value pair in the profile's metadata. */
inline void metadata(const char *key, const char *value) noexcept { kprof_metadata(key, value); }
inline void metadata(const std::string &key, const std::string &value) noexcept {
    kprof_metadata(key.c_str(), value.c_str());
}

/* Writes all output now and stops measuring (also done at exit). */
inline void finalize() noexcept { kprof_finalize(); }

} // namespace kprof

/* KPROF_SCOPE("name"): a region for the rest of the enclosing scope. */
#define KPROF_CONCAT_(a, b) a##b
#define KPROF_CONCAT(a, b) KPROF_CONCAT_(a, b)
#define KPROF_SCOPE(name) ::kprof::Region KPROF_CONCAT(kprof_scope_, __LINE__)(name)

#endif /* KPROF_HPP */
