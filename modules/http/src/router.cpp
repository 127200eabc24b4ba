// modules/http/src/router.cpp — a segment trie: literal children, one `:param` child, a `*` tail.
#include "queen/http/router.hpp"

#include <map>

#include "queen/core/assert.hpp"

namespace queen::http {
namespace {

struct Route {
    Method method;
    std::string pattern;
    std::vector<std::string> param_names;
    Handler handler;
};

struct Node {
    std::map<std::string, std::unique_ptr<Node>, std::less<>> literals;
    std::unique_ptr<Node> param;
    std::unique_ptr<Node> wildcard;  // matches the rest; has no children
    std::vector<Route> routes;
};

std::vector<std::string_view> split_pattern(std::string_view pattern) {
    std::vector<std::string_view> pieces;
    std::size_t start = 1;
    while (start <= pattern.size()) {
        std::size_t end = pattern.find('/', start);
        if (end == std::string_view::npos) {
            end = pattern.size();
        }
        if (end > start) {
            pieces.push_back(pattern.substr(start, end - start));
        }
        start = end + 1;
    }
    return pieces;
}

struct Match {
    const Node* node = nullptr;
    const Route* route = nullptr;
    std::vector<std::string> captures;
};

const Route* find_route(const Node& node, Method method) {
    for (const Route& route : node.routes) {
        if (route.method == method) {
            return &route;
        }
    }
    if (method == Method::head) {
        return find_route(node, Method::get);
    }
    return nullptr;
}

// Depth-first, literals before `:param` before `*`. Returns true once a route for `method` is
// found; remembers the first node that matched the path for any method (for the 405 answer).
bool match(const Node& node, const std::vector<std::string>& segments, std::size_t index,
           Method method, std::vector<std::string>& captures, Match& found, const Node*& any) {
    if (index == segments.size() && !node.routes.empty()) {
        if (const Route* route = find_route(node, method)) {
            found.node = &node;
            found.route = route;
            found.captures = std::move(captures);  // a match ends the search
            return true;
        }
        if (any == nullptr) {
            any = &node;
        }
    }
    if (index < segments.size()) {
        const auto literal = node.literals.find(segments[index]);
        if (literal != node.literals.end() &&
            match(*literal->second, segments, index + 1, method, captures, found, any)) {
            return true;
        }
        if (node.param) {
            captures.push_back(segments[index]);
            if (match(*node.param, segments, index + 1, method, captures, found, any)) {
                return true;
            }
            captures.pop_back();
        }
    }
    if (node.wildcard && !node.wildcard->routes.empty()) {
        std::string rest;
        for (std::size_t i = index; i < segments.size(); ++i) {
            if (i > index) {
                rest.push_back('/');
            }
            rest += segments[i];
        }
        if (const Route* route = find_route(*node.wildcard, method)) {
            found.node = node.wildcard.get();
            found.route = route;
            found.captures = std::move(captures);  // a match ends the search
            found.captures.push_back(std::move(rest));
            return true;
        }
        if (any == nullptr) {
            any = node.wildcard.get();
        }
    }
    return false;
}

std::string allowed_methods(const Node& node) {
    std::string allow;
    bool has_get = false;
    bool has_head = false;
    for (const Route& route : node.routes) {
        has_get = has_get || route.method == Method::get;
        has_head = has_head || route.method == Method::head;
    }
    for (const Route& route : node.routes) {
        if (!allow.empty()) {
            allow += ", ";
        }
        allow +=
            route.method == Method::other ? std::string_view("OTHER") : method_name(route.method);
    }
    if (has_get && !has_head) {
        allow += ", HEAD";
    }
    return allow;
}

}  // namespace

struct Router::Impl {
    Node root;
    std::size_t count = 0;
};

Router::Router() : impl_(std::make_unique<Impl>()) {}
Router::~Router() = default;
Router::Router(Router&&) noexcept = default;
Router& Router::operator=(Router&&) noexcept = default;

void Router::add(Method method, std::string_view pattern, Handler handler) {
    QUEEN_ASSERT(impl_ != nullptr, "add() on a moved-from Router");
    QUEEN_ASSERT(!pattern.empty() && pattern.front() == '/',
                 "route pattern must start with '/': ", pattern);
    QUEEN_ASSERT(handler != nullptr, "empty handler for ", pattern);
    QUEEN_ASSERT(method != Method::other, "routes need a named method: ", pattern);
    Node* node = &impl_->root;
    std::vector<std::string> names;
    const std::vector<std::string_view> pieces = split_pattern(pattern);
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        const std::string_view piece = pieces[i];
        if (piece == "*") {
            QUEEN_ASSERT(i + 1 == pieces.size(), "'*' must be the last segment: ", pattern);
            if (!node->wildcard) {
                node->wildcard = std::make_unique<Node>();
            }
            node = node->wildcard.get();
            names.emplace_back("*");
        } else if (piece.front() == ':') {
            QUEEN_ASSERT(piece.size() > 1, "empty parameter name in ", pattern);
            if (!node->param) {
                node->param = std::make_unique<Node>();
            }
            node = node->param.get();
            names.emplace_back(piece.substr(1));
        } else {
            auto& child = node->literals[std::string(piece)];
            if (!child) {
                child = std::make_unique<Node>();
            }
            node = child.get();
        }
    }
    for (const Route& existing : node->routes) {
        QUEEN_ASSERT(existing.method != method, "route registered twice: ", method_name(method),
                     " ", pattern, " (already ", existing.pattern, ")");
    }
    node->routes.push_back(
        Route{method, std::string(pattern), std::move(names), std::move(handler)});
    ++impl_->count;
}

void Router::handle(Request& request, Responder responder) const {
    QUEEN_ASSERT(impl_ != nullptr, "handle() on a moved-from Router");
    Match found;
    const Node* any = nullptr;
    std::vector<std::string> captures;
    if (match(impl_->root, request.segments, 0, request.method, captures, found, any)) {
        const Route& route = *found.route;
        QUEEN_ASSERT(found.captures.size() == route.param_names.size(), "capture count mismatch");
        request.params.clear();
        request.params.reserve(route.param_names.size());
        for (std::size_t i = 0; i < route.param_names.size(); ++i) {
            request.params.emplace_back(route.param_names[i], std::move(found.captures[i]));
        }
        route.handler(request, std::move(responder));
        return;
    }
    if (any != nullptr) {
        Response response = Response::error(
            405, "Method " + request.method_name + " is not allowed on " + request.path);
        response.headers.push_back(Header{"Allow", allowed_methods(*any)});
        responder.complete(std::move(response));
        return;
    }
    responder.complete(
        Response::error(404, "Not found: " + request.method_name + " " + request.path));
}

Handler Router::into_handler() && {
    auto shared = std::make_shared<Router>(std::move(*this));
    return [shared](Request& request, Responder responder) {
        shared->handle(request, std::move(responder));
    };
}

std::size_t Router::size() const noexcept {
    return impl_ ? impl_->count : 0;
}

}  // namespace queen::http
