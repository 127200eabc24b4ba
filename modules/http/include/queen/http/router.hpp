// queen/http/router.hpp — method + path pattern routing with `:param` segments; 404 and 405.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "queen/http/request.hpp"
#include "queen/http/responder.hpp"

namespace queen::http {

/// Handles one request: complete `responder` now or later (see Responder). Runs on the I/O
/// thread of the connection, so it must not block: hand slow work to another thread and
/// complete from there. `request` is valid only during the call; move out what you keep.
/// An exception escaping a handler becomes a 500 (when the responder is still open).
using Handler = std::function<void(Request& request, Responder responder)>;

/// Maps (method, path) to handlers. Patterns are '/'-separated segments: a literal matches that
/// exact (decoded) segment, `:name` matches any one non-empty segment and stores it in
/// Request::params, and a final `*` matches the rest of the path (zero or more segments, stored
/// joined by '/' under the name "*"). Literals win over `:params`, which win over `*`, segment
/// by segment from the left. HEAD falls back to the GET route (the server drops the body).
/// Unmatched paths answer `404 {"error": "..."}`; a path matched only for other methods
/// answers 405 with an Allow header.
///
/// Thread-safety: build it on one thread; once it is handling requests it is read-only and
/// handle() may run on many threads at once.
class Router {
public:
    /// An empty router: every request answers 404.
    Router();
    ~Router();
    Router(Router&&) noexcept;
    Router& operator=(Router&&) noexcept;

    /// Registers `handler` for `method` and `pattern` (must start with '/'). Registering the
    /// same method and pattern shape twice, an empty `:` name, a `*` that is not last, or an
    /// empty handler is a programmer error and asserts.
    void add(Method method, std::string_view pattern, Handler handler);
    /// Shorthands for add(Method::get|post|put|delete_, pattern, handler).
    void get(std::string_view pattern, Handler handler) {
        add(Method::get, pattern, std::move(handler));
    }
    void post(std::string_view pattern, Handler handler) {
        add(Method::post, pattern, std::move(handler));
    }
    void put(std::string_view pattern, Handler handler) {
        add(Method::put, pattern, std::move(handler));
    }
    void del(std::string_view pattern, Handler handler) {
        add(Method::delete_, pattern, std::move(handler));
    }

    /// Routes `request` (fills request.params) and runs the handler, or answers 404/405.
    void handle(Request& request, Responder responder) const;

    /// Moves this router into a Handler for Server::start().
    [[nodiscard]] Handler into_handler() &&;

    /// Number of registered (method, pattern) routes.
    [[nodiscard]] std::size_t size() const noexcept;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace queen::http
